package v3lockpb

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
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
	got := describe(File_v3lock_proto)
	if !slices.Equal(got, etcdWire) {
		t.Fatalf("wire shape differs from etcd's:\ngot  %q\nwant %q", got, etcdWire)
	}
	for _, m := range Lock_ServiceDesc.Methods {
		if !slices.Contains(got, fmt.Sprintf("rpc /%s/%s %s", Lock_ServiceDesc.ServiceName, m.MethodName, rpcTypes(File_v3lock_proto, m.MethodName))) {
			t.Errorf("grpc method %s is not in v3lock.proto", m.MethodName)
		}
	}
}

// describe lists every field and method of fd as one line each.
func describe(fd protoreflect.FileDescriptor) []string {
	var out []string
	for i := 0; i < fd.Messages().Len(); i++ {
		m := fd.Messages().Get(i)
		for j := 0; j < m.Fields().Len(); j++ {
			f := m.Fields().Get(j)
			kind := f.Kind().String()
			if f.Message() != nil {
				kind = string(f.Message().FullName())
			}
			out = append(out, fmt.Sprintf("%s.%s=%d %s", m.FullName(), f.Name(), f.Number(), kind))
		}
	}
	svc := fd.Services().Get(0)
	for i := 0; i < svc.Methods().Len(); i++ {
		out = append(out, fmt.Sprintf("rpc /%s/%s %s", svc.FullName(), svc.Methods().Get(i).Name(), rpcTypes(fd, string(svc.Methods().Get(i).Name()))))
	}
	return out
}

func rpcTypes(fd protoreflect.FileDescriptor, method string) string {
	m := fd.Services().Get(0).Methods().ByName(protoreflect.Name(method))
	if m == nil {
		return "?"
	}
	stream := ""
	if m.IsStreamingServer() {
		stream = "stream "
	}
	return fmt.Sprintf("%s -> %s%s", m.Input().FullName(), stream, m.Output().FullName())
}
