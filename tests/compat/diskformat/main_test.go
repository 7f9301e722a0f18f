// Package diskformat proves that cairn's data directory is etcd's: a data dir
// written by cairn is served unchanged by the real etcd v3.7.3 and the other
// way round, etcd's own tools (etcdutl) read cairn's files, and the bbolt
// schema cairn writes matches etcd's for the same workload.
//
// The tests are black-box: both servers run as processes and are driven
// through the official Go client.
package diskformat

import (
	"os"
	"testing"

	"github.com/cairnkv/cairn/tests/harness"
)

// Paths of the binaries under test, set by TestMain.
var (
	cairnBin   string
	etcdBin    string
	etcdutlBin string
)

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m,
		harness.Builds(map[string]*string{"cairn": &cairnBin}),
		harness.EtcdTools(map[string]*string{"etcd": &etcdBin, "etcdutl": &etcdutlBin})))
}
