package v3electionpb

import (
	"testing"

	"github.com/cairnkv/cairn/api/internal/wiretest"
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
	wiretest.Check(t, File_v3election_proto, Election_ServiceDesc, etcdWire)
}
