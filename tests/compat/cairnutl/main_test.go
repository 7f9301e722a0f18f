// Package cairnutl checks cairnutl against the official etcdutl v3.7.3.
// Every test is differential: snapshots come from a real etcd through the
// official client, both tools run on copies of the same files, and their
// outputs, exit codes and written files must agree; restored data dirs must
// start both a real etcd and cairn.
package cairnutl

import (
	"fmt"
	"os"
	"testing"

	"github.com/cairnkv/cairn/tests/harness"
)

// Binaries used by every test, resolved once by TestMain.
var (
	cairnBin    string
	cairnutlBin string
	etcdBin     string
	etcdutlBin  string
)

func TestMain(m *testing.M) { os.Exit(setupAndRun(m)) }

func setupAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cairn-compat-cairnutl-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cairnutl compat: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	fixtureDir = dir
	return harness.Main(m,
		harness.Builds(map[string]*string{"cairn": &cairnBin, "cairnutl": &cairnutlBin}),
		harness.EtcdTools(map[string]*string{"etcd": &etcdBin, "etcdutl": &etcdutlBin}))
}
