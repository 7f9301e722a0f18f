package e2e

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// TestKVRangeStreamSortTargetsLikeEtcd streams ranges with sort order NONE
// and every sort target from cairn and from etcd v3.7.3 holding the same
// history, and compares them chunk by chunk. etcd sorts each chunk on its
// own by the target (NONE with a target other than KEY is ASCEND), and the
// next chunk starts after the last key of the sorted one, so the result
// depends on where chunks end: this pins cairn to etcd's chunking too.
// Streams in key order (target KEY) hold the same pairs and metadata as
// etcd's, but cairn chunks them its own way (chunks bounded in bytes, see
// server/v3rpc/rangestream.go), so they are compared merged.
func TestKVRangeStreamSortTargetsLikeEtcd(t *testing.T) {
	members := map[string]*member{
		"cairn": startMember(t, memberOpts{}),
		"etcd":  startMember(t, memberOpts{bin: etcdBinary(t)}),
	}
	kvs := map[string]pb.KVClient{}
	for name, m := range members {
		cli := m.client(t)
		seedSortHistory(t, cli)
		kvs[name] = pb.NewKVClient(cli.ActiveConnection())
	}
	targets := []pb.RangeRequest_SortTarget{pb.RangeRequest_KEY, pb.RangeRequest_VERSION, pb.RangeRequest_CREATE, pb.RangeRequest_MOD, pb.RangeRequest_VALUE}
	variants := []struct {
		name string
		req  *pb.RangeRequest
	}{
		{"all", &pb.RangeRequest{}},
		{"keys only", &pb.RangeRequest{KeysOnly: true}},
		{"count only", &pb.RangeRequest{CountOnly: true}},
		{"limit 5", &pb.RangeRequest{Limit: 5}},
		{"limit 45", &pb.RangeRequest{Limit: 45}},
		{"limit 45 keys only", &pb.RangeRequest{Limit: 45, KeysOnly: true}},
		{"limit above count", &pb.RangeRequest{Limit: 1000}},
		{"historical", &pb.RangeRequest{Revision: 200}},
	}
	for _, target := range targets {
		for _, v := range variants {
			t.Run(target.String()+"/"+v.name, func(t *testing.T) {
				req := proto.Clone(v.req).(*pb.RangeRequest)
				req.Key, req.RangeEnd, req.SortTarget = []byte("s/"), []byte("s0"), target
				merged := target == pb.RangeRequest_KEY
				want := streamChunks(t, kvs["etcd"], req, merged)
				got := streamChunks(t, kvs["cairn"], req, merged)
				if got != want {
					t.Fatalf("cairn's stream differs from etcd's\ncairn: %s\netcd:  %s", got, want)
				}
			})
		}
	}
}

// seedSortHistory writes 150 keys in an order unlike their key order, with
// values in yet another order, then updates a third of them (versions and
// mod revisions apart from create revisions). Both members get the same
// sequence, so revisions match.
func seedSortHistory(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	const n = 150
	for i := range n {
		k := (i * 61) % n
		mustPut(t, cli, fmt.Sprintf("s/%03d", k), fmt.Sprintf("v%03d", (k*37)%n))
	}
	for i := range n / 3 {
		k := (i * 7) % n
		for range 1 + i%3 {
			mustPut(t, cli, fmt.Sprintf("s/%03d", k), fmt.Sprintf("u%03d", (k*11)%n))
		}
	}
}

// streamChunks renders a RangeStream answer chunk by chunk: the pairs of
// each, and the metadata of the chunks that carry it (the cluster and
// member IDs differ between the two members, so only the revision of the
// header is kept). merged renders all pairs as one chunk.
func streamChunks(t *testing.T, kv pb.KVClient, req *pb.RangeRequest, merged bool) string {
	t.Helper()
	stream, err := kv.RangeStream(ctx(t), req)
	must(t, err)
	var out []string
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			if merged {
				return strings.Join(out, " ")
			}
			return strings.Join(out, "\n")
		}
		must(t, err)
		rr := msg.RangeResponse
		var pairs []string
		for _, kv := range rr.Kvs {
			pairs = append(pairs, fmt.Sprintf("%s=%s@c%d,m%d,v%d", kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision, kv.Version))
		}
		chunk := strings.Join(pairs, " ")
		if !merged {
			chunk = "[" + chunk + "]"
		}
		if rr.Header != nil || rr.More || rr.Count != 0 {
			rev := int64(-1)
			if rr.Header != nil {
				rev = rr.Header.Revision
			}
			chunk += fmt.Sprintf(" rev=%d more=%v count=%d", rev, rr.More, rr.Count)
		}
		out = append(out, chunk)
	}
}
