package v3lockpb

import (
	"testing"

	"github.com/cairnkv/cairn/api/internal/wiretest"
)

// etcdWire is the wire shape of etcd v3.7's v3lock.proto
// (server/etcdserver/api/v3lock/v3lockpb), transcribed by hand: a change to
// v3lock.proto that breaks compatibility with etcd's clients fails here.
var etcdWire = []string{
	"v3lockpb.LockRequest.name=1 bytes",
	"v3lockpb.LockRequest.lease=2 int64",
	"v3lockpb.LockResponse.header=1 etcdserverpb.ResponseHeader",
	"v3lockpb.LockResponse.key=2 bytes",
	"v3lockpb.UnlockRequest.key=1 bytes",
	"v3lockpb.UnlockResponse.header=1 etcdserverpb.ResponseHeader",
	"rpc /v3lockpb.Lock/Lock v3lockpb.LockRequest -> v3lockpb.LockResponse",
	"rpc /v3lockpb.Lock/Unlock v3lockpb.UnlockRequest -> v3lockpb.UnlockResponse",
}

func TestWireMatchesEtcd(t *testing.T) {
	wiretest.Check(t, File_v3lock_proto, Lock_ServiceDesc, etcdWire)
}
