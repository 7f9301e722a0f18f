package v3electionpb

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// etcdWire is the wire shape of etcd v3.7's v3election.proto
// (server/etcdserver/api/v3election/v3electionpb), transcribed by hand: a change to
// v3election.proto that breaks compatibility with etcd's clients fails here.
var etcdWire = []string{
	"v3electionpb.CampaignRequest.name=1 bytes",
	"v3electionpb.CampaignRequest.lease=2 int64",
	"v3electionpb.CampaignRequest.value=3 bytes",
	"v3electionpb.CampaignResponse.header=1 etcdserverpb.ResponseHeader",
	"v3electionpb.CampaignResponse.leader=2 v3electionpb.LeaderKey",
	"v3electionpb.LeaderKey.name=1 bytes",
	"v3electionpb.LeaderKey.key=2 bytes",
	"v3electionpb.LeaderKey.rev=3 int64",
	"v3electionpb.LeaderKey.lease=4 int64",
	"v3electionpb.LeaderRequest.name=1 bytes",
	"v3electionpb.LeaderResponse.header=1 etcdserverpb.ResponseHeader",
	"v3electionpb.LeaderResponse.kv=2 mvccpb.KeyValue",
	"v3electionpb.ResignRequest.leader=1 v3electionpb.LeaderKey",
	"v3electionpb.ResignResponse.header=1 etcdserverpb.ResponseHeader",
	"v3electionpb.ProclaimRequest.leader=1 v3electionpb.LeaderKey",
	"v3electionpb.ProclaimRequest.value=2 bytes",
	"v3electionpb.ProclaimResponse.header=1 etcdserverpb.ResponseHeader",
	"rpc /v3electionpb.Election/Campaign v3electionpb.CampaignRequest -> v3electionpb.CampaignResponse",
	"rpc /v3electionpb.Election/Proclaim v3electionpb.ProclaimRequest -> v3electionpb.ProclaimResponse",
	"rpc /v3electionpb.Election/Leader v3electionpb.LeaderRequest -> v3electionpb.LeaderResponse",
	"rpc /v3electionpb.Election/Observe v3electionpb.LeaderRequest -> stream v3electionpb.LeaderResponse",
	"rpc /v3electionpb.Election/Resign v3electionpb.ResignRequest -> v3electionpb.ResignResponse",
}

func TestWireMatchesEtcd(t *testing.T) {
	got := describe(File_v3election_proto)
	if !slices.Equal(got, etcdWire) {
		t.Fatalf("wire shape differs from etcd's:\ngot  %q\nwant %q", got, etcdWire)
	}
	for _, m := range Election_ServiceDesc.Methods {
		if !slices.Contains(got, fmt.Sprintf("rpc /%s/%s %s", Election_ServiceDesc.ServiceName, m.MethodName, rpcTypes(File_v3election_proto, m.MethodName))) {
			t.Errorf("grpc method %s is not in v3election.proto", m.MethodName)
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
