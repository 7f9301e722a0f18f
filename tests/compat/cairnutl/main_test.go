// Package cairnutl checks cairnutl against the official etcdutl v3.7.3.
// Every test is differential: snapshots come from a real etcd through the
// official client, both tools run on copies of the same files, and their
// outputs, exit codes and written files must agree; restored data dirs must
// start both a real etcd and cairn.
package cairnutl

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
	cairnBin = filepath.Join(dir, "cairn")
	cairnutlBin = filepath.Join(dir, "cairnutl")
	for bin, pkg := range map[string]string{cairnBin: "./cmd/cairn", cairnutlBin: "./cmd/cairnutl"} {
		build := exec.Command("go", "build", "-o", bin, "github.com/cairnkv/cairn/"+pkg[2:])
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "cairnutl compat: building", pkg, "failed:", err)
			return 1
		}
	}
	for name, dst := range map[string]*string{"etcd": &etcdBin, "etcdutl": &etcdutlBin} {
		p, err := etcdtools.Path(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cairnutl compat: building %s %s failed: %v\n", name, etcdtools.Version, err)
			return 1
		}
		*dst = p
	}
	fixtureDir = dir
	return m.Run()
}
