package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// fakeHashes is a hashSource with scripted answers; it records alarms.
type fakeHashes struct {
	id         uint64
	local      []mvcc.KeyValueHash // successive HashByRev(0) answers
	stored     []mvcc.KeyValueHash // Hashes()
	peers      map[int64][]peerHash
	readErr    error
	asked      []int64 // revisions peerHashes was asked for
	alarms     []uint64
	localCalls int
}

func (f *fakeHashes) HashByRev(int64) (mvcc.KeyValueHash, int64, error) {
	h := f.local[min(f.localCalls, len(f.local)-1)]
	f.localCalls++
	return h, h.Revision, nil
}

func (f *fakeHashes) Hashes() []mvcc.KeyValueHash { return slices.Clone(f.stored) }
func (f *fakeHashes) memberID() uint64            { return f.id }
func (f *fakeHashes) reqTimeout() time.Duration   { return time.Second }
func (f *fakeHashes) peerHashes(rev int64) []peerHash {
	f.asked = append(f.asked, rev)
	return f.peers[rev]
}
func (f *fakeHashes) linearizableReadNotify(context.Context) error { return f.readErr }
func (f *fakeHashes) triggerCorruptAlarm(id uint64)                { f.alarms = append(f.alarms, id) }

func kvh(hash uint32, compact, rev int64) mvcc.KeyValueHash {
	return mvcc.KeyValueHash{Hash: hash, CompactRevision: compact, Revision: rev}
}

// answer is peer id's HashKV response: header revision rev.
func answer(id uint64, hash uint32, compact, rev int64) peerHash {
	return peerHash{id: id, urls: []string{"http://peer"}, resp: &pb.HashKVResponse{
		Header: &pb.ResponseHeader{Revision: rev}, Hash: hash, CompactRevision: compact, HashRevision: rev,
	}}
}

func failed(id uint64, err error) peerHash {
	return peerHash{id: id, urls: []string{"http://peer"}, err: err}
}

func newChecker(f *fakeHashes) *corruptionChecker {
	return &corruptionChecker{lg: zap.NewNop(), src: f}
}

func TestInitialCheck(t *testing.T) {
	local := kvh(100, 5, 10)
	tests := []struct {
		name    string
		peers   []peerHash
		wantErr bool
	}{
		{"all agree", []peerHash{answer(2, 100, 5, 10), answer(3, 100, 5, 12)}, false},
		{"different hash, same compact revision", []peerHash{answer(2, 100, 5, 10), answer(3, 101, 5, 10)}, true},
		{"different hash, other compact revision", []peerHash{answer(2, 101, 8, 12)}, false},
		{"peer behind", []peerHash{failed(2, rpctypes.ErrFutureRev)}, false},
		{"peer compacted past us", []peerHash{failed(2, rpctypes.ErrCompacted)}, false},
		{"other cluster", []peerHash{failed(2, rpctypes.ErrClusterIDMismatch)}, false},
		{"unreachable", []peerHash{failed(2, errors.New("connection refused"))}, false},
		{"no peers", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeHashes{id: 0x1a, local: []mvcc.KeyValueHash{local}, peers: map[int64][]peerHash{10: tt.peers}}
			err := newChecker(f).initialCheck()
			if tt.wantErr {
				if err == nil || err.Error() != "1a found data inconsistency with peers" {
					t.Fatalf("err = %v, want etcd's inconsistency error", err)
				}
			} else if err != nil {
				t.Fatalf("err = %v, want none", err)
			}
			if !slices.Equal(f.asked, []int64{10}) {
				t.Fatalf("peers asked at %v, want the local revision 10", f.asked)
			}
			if len(f.alarms) != 0 {
				t.Fatalf("the initial check raised alarms %v", f.alarms)
			}
		})
	}
}

func TestPeriodicCheck(t *testing.T) {
	const leader = 1
	tests := []struct {
		name  string
		local []mvcc.KeyValueHash // before and after the read barrier
		peers []peerHash
		want  []uint64
	}{
		{"all agree", []mvcc.KeyValueHash{kvh(7, 3, 10)},
			[]peerHash{answer(2, 7, 3, 10), answer(3, 7, 3, 10)}, nil},
		{"follower hash differs", []mvcc.KeyValueHash{kvh(7, 3, 10)},
			[]peerHash{answer(2, 7, 3, 10), answer(3, 8, 3, 10)}, []uint64{3}},
		{"follower with another compact revision is not compared", []mvcc.KeyValueHash{kvh(7, 3, 10)},
			[]peerHash{answer(2, 8, 2, 10)}, nil},
		{"follower ahead of the leader", []mvcc.KeyValueHash{kvh(7, 3, 10)},
			[]peerHash{answer(2, 7, 3, 11)}, []uint64{2}},
		{"follower compacted beyond the leader", []mvcc.KeyValueHash{kvh(7, 3, 10)},
			[]peerHash{answer(2, 9, 4, 10)}, []uint64{2}},
		{"only the first divergent follower", []mvcc.KeyValueHash{kvh(7, 3, 10)},
			[]peerHash{answer(2, 8, 3, 10), answer(3, 9, 3, 10)}, []uint64{2}},
		{"leader's own hash changed at the same revision", []mvcc.KeyValueHash{kvh(7, 3, 10), kvh(8, 3, 10)},
			[]peerHash{answer(2, 9, 3, 10)}, []uint64{leader}},
		{"leader moved on: hashes of different revisions", []mvcc.KeyValueHash{kvh(7, 3, 10), kvh(8, 3, 11)},
			[]peerHash{answer(2, 7, 3, 10)}, nil},
		{"unreachable follower", []mvcc.KeyValueHash{kvh(7, 3, 10)},
			[]peerHash{failed(2, errors.New("timeout"))}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeHashes{id: leader, local: tt.local, peers: map[int64][]peerHash{10: tt.peers}}
			if err := newChecker(f).periodicCheck(); err != nil {
				t.Fatalf("periodicCheck: %v", err)
			}
			if !slices.Equal(f.alarms, tt.want) {
				t.Fatalf("alarms for %v, want %v", f.alarms, tt.want)
			}
		})
	}
}

func TestPeriodicCheckStopsWithoutReadBarrier(t *testing.T) {
	f := &fakeHashes{id: 1, local: []mvcc.KeyValueHash{kvh(7, 3, 10)}, readErr: errors.New("stopped"),
		peers: map[int64][]peerHash{10: {answer(2, 8, 3, 10)}}}
	if err := newChecker(f).periodicCheck(); err == nil || len(f.alarms) != 0 {
		t.Fatalf("err %v, alarms %v; want the read error and no alarm", err, f.alarms)
	}
}

func TestCheckPeerHashes(t *testing.T) {
	const leader = 1
	leaderHash := kvh(7, 3, 10)
	tests := []struct {
		name    string
		peers   []peerHash
		want    []uint64
		settled bool // the round needs no older compaction
	}{
		{"3 members agree", []peerHash{answer(2, 7, 3, 10), answer(3, 7, 3, 10)}, nil, true},
		{"one follower in a minority of 3", []peerHash{answer(2, 7, 3, 10), answer(3, 8, 3, 10)}, []uint64{3}, true},
		{"the leader in a minority of 3", []peerHash{answer(2, 8, 3, 10), answer(3, 8, 3, 10)}, []uint64{leader}, true},
		{"two minorities of 5", []peerHash{answer(2, 7, 3, 10), answer(3, 7, 3, 10), answer(4, 8, 3, 10), answer(5, 9, 3, 10)},
			[]uint64{4, 5}, true},
		{"no quorum in 3: the whole cluster", []peerHash{answer(2, 8, 3, 10), answer(3, 9, 3, 10)}, []uint64{0}, true},
		{"no quorum counting a silent member", []peerHash{answer(2, 8, 3, 10), failed(3, errors.New("timeout"))}, []uint64{0}, true},
		{"other compact revision is skipped", []peerHash{answer(2, 7, 3, 10), answer(3, 8, 4, 10)}, nil, false},
		{"silent member: try an older compaction", []peerHash{answer(2, 7, 3, 10), failed(3, errors.New("timeout"))}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeHashes{id: leader}
			c := newChecker(f)
			if got := c.checkPeerHashes(leaderHash, tt.peers); got != tt.settled {
				t.Errorf("settled = %v, want %v", got, tt.settled)
			}
			if !slices.Equal(f.alarms, tt.want) {
				t.Fatalf("alarms for %v, want %v", f.alarms, tt.want)
			}
		})
	}
}

// TestCompactHashCheckWalksBack checks the order of the compaction check:
// newest compaction first, older ones only while a round is unsettled, and
// revisions verified on the whole cluster are not checked again.
func TestCompactHashCheckWalksBack(t *testing.T) {
	f := &fakeHashes{id: 1,
		stored: []mvcc.KeyValueHash{kvh(1, -1, 4), kvh(2, 4, 8), kvh(3, 8, 12)},
		peers: map[int64][]peerHash{
			12: {answer(2, 3, 8, 12), failed(3, errors.New("still compacting"))},
			8:  {answer(2, 2, 4, 8), answer(3, 2, 4, 8)},
			4:  {answer(2, 1, -1, 4), answer(3, 1, -1, 4)},
		}}
	c := newChecker(f)
	c.compactHashCheck()
	if !slices.Equal(f.asked, []int64{12, 8}) || len(f.alarms) != 0 {
		t.Fatalf("first round asked %v, alarms %v; want [12 8], none", f.asked, f.alarms)
	}
	f.asked = nil
	c.compactHashCheck()
	if !slices.Equal(f.asked, []int64{12}) {
		t.Fatalf("second round asked %v; want [12] (8 and older verified)", f.asked)
	}
}

func TestIDList(t *testing.T) {
	if got := idList([]uint64{0x8e9e05c52164694d, 2}); !strings.EqualFold(got, "8e9e05c52164694d,2") {
		t.Fatalf("idList = %q", got)
	}
}

// TestPeerHashKVEndpoint checks /members/hashkv against etcd's wire format
// and errors, through the member's own client.
func TestPeerHashKVEndpoint(t *testing.T) {
	s := startServer(t, testConfig(t.TempDir()))
	for i := range 3 {
		mustPut(t, s, key(i), "v")
	}
	srv := httptest.NewServer(s.PeerHandler())
	defer srv.Close()
	want, err := s.maint.HashKV(testCtx(t), 0)
	if err != nil {
		t.Fatalf("HashKV: %v", err)
	}
	rev := want.GetHeader().GetRevision()

	body := fmt.Sprintf(`{"header":{"revision":%d},"hash":%d,"compact_revision":-1,"hash_revision":%d}`, rev, want.Hash, rev)
	tests := []struct {
		name, method, reqBody, clusterID string
		wantCode                         int
		wantBody                         string
	}{
		{"current revision", http.MethodGet, `{}`, "", http.StatusOK, body},
		{"given revision", http.MethodGet, fmt.Sprintf(`{"revision":%d}`, rev), idHex(s.ClusterID()), http.StatusOK, body},
		{"future revision", http.MethodGet, fmt.Sprintf(`{"revision":%d}`, rev+1), "", http.StatusBadRequest, "mvcc: required revision is a future revision\n"},
		{"not json", http.MethodGet, `x`, "", http.StatusBadRequest, "error unmarshalling request\n"},
		{"other cluster", http.MethodGet, `{}`, "abc", http.StatusPreconditionFailed, "cluster ID mismatch\n"},
		{"post", http.MethodPost, `{}`, "", http.StatusMethodNotAllowed, "Method Not Allowed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+peerHashKVPath, strings.NewReader(tt.reqBody))
			if err != nil {
				t.Fatal(err)
			}
			if tt.clusterID != "" {
				req.Header.Set("X-Etcd-Cluster-ID", tt.clusterID)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantCode || string(got) != tt.wantBody {
				t.Fatalf("%d %q, want %d %q", resp.StatusCode, got, tt.wantCode, tt.wantBody)
			}
		})
	}

	t.Run("client", func(t *testing.T) {
		got, err := s.corruption.src.(memberHashes).peers.fetch(testCtx(t), srv.URL, rev)
		if err != nil || got.Hash != want.Hash || got.GetHeader().GetRevision() != rev || got.CompactRevision != -1 {
			t.Fatalf("fetchPeerHashKV = %v, %v; want hash %d at %d", got, err, want.Hash, rev)
		}
		if _, err := s.corruption.src.(memberHashes).peers.fetch(testCtx(t), srv.URL, rev+1); !errors.Is(err, rpctypes.ErrFutureRev) {
			t.Fatalf("future revision: %v, want ErrFutureRev", err)
		}
	})
}
