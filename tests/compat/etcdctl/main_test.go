// Package etcdctl checks that the official etcdctl v3.7.3 works unchanged
// against cairn. Every test is differential: the same etcdctl command runs
// against a real etcd and against cairn, both fresh single members with the
// same name, cluster token and advertised peer URL (so the same member and
// cluster IDs), and the outputs must agree once the values that may
// legitimately differ (raft term and index, database sizes, durations,
// endpoint addresses, the server's patch version) are normalised.
package etcdctl

import (
	"os"
	"testing"

	"github.com/cairnkv/cairn/tests/harness"
)

// Binaries used by every test, resolved once by TestMain.
var (
	cairnBin   string
	etcdBin    string
	etcdctlBin string
	etcdutlBin string
)

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m,
		harness.Builds(map[string]*string{"cairn": &cairnBin}),
		harness.EtcdTools(map[string]*string{"etcd": &etcdBin, "etcdctl": &etcdctlBin, "etcdutl": &etcdutlBin})))
}
