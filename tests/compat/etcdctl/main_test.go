// Package etcdctl checks that the official etcdctl v3.7.3 works unchanged
// against cairn. Every test is differential: the same etcdctl command runs
// against a real etcd and against cairn, both fresh single members with the
// same name, cluster token and advertised peer URL (so the same member and
// cluster IDs), and the outputs must agree once the values that may
// legitimately differ (raft term and index, database sizes, durations,
// endpoint addresses, the server's patch version) are normalised.
package etcdctl

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cairnkv/cairn/tests/compat/etcdtools"
)

// Binaries used by every test, resolved once by TestMain.
var (
	cairnBin   string
	etcdBin    string
	etcdctlBin string
	etcdutlBin string
)

func TestMain(m *testing.M) {
	os.Exit(setupAndRun(m))
}

func setupAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cairn-compat-etcdctl-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdctl compat: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	cairnBin = filepath.Join(dir, "cairn")
	// No -race: cairn is a black box here, and a plain build is quicker.
	build := exec.Command("go", "build", "-o", cairnBin, "github.com/cairnkv/cairn/cmd/cairn")
	build.Stdout = os.Stderr
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "etcdctl compat: building cairn failed:", err)
		return 1
	}
	for _, b := range []struct {
		name string
		dst  *string
	}{{"etcd", &etcdBin}, {"etcdctl", &etcdctlBin}, {"etcdutl", &etcdutlBin}} {
		p, err := etcdtools.Path(b.name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "etcdctl compat: building %s %s failed: %v\n", b.name, etcdtools.Version, err)
			return 1
		}
		*b.dst = p
	}
	return m.Run()
}
