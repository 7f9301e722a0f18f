// Package diskformat proves that cairn's data directory is etcd's: a data dir
// written by cairn is served unchanged by the real etcd v3.7.3 and the other
// way round, etcd's own tools (etcdutl) read cairn's files, and the bbolt
// schema cairn writes matches etcd's for the same workload.
//
// The tests are black-box: both servers run as processes and are driven
// through the official Go client.
package diskformat

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cairnkv/cairn/tests/compat/etcdtools"
)

// Paths of the binaries under test, set by TestMain.
var (
	cairnBin   string
	etcdBin    string
	etcdutlBin string
)

func TestMain(m *testing.M) {
	os.Exit(setup(m))
}

func setup(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cairn-diskformat-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "diskformat: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	cairnBin = filepath.Join(dir, "cairn")
	// No -race: cairn is a black box here and a plain build is faster.
	build := exec.Command("go", "build", "-o", cairnBin, "github.com/cairnkv/cairn/cmd/cairn")
	build.Stdout = os.Stderr
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "diskformat: building cairn failed:", err)
		return 1
	}
	for name, dst := range map[string]*string{"etcd": &etcdBin, "etcdutl": &etcdutlBin} {
		p, err := etcdtools.Path(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "diskformat: building", name, "failed:", err)
			return 1
		}
		*dst = p
	}
	return m.Run()
}
