package etcdserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/peer"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// The member's side of corruption detection (see corrupt.go): the peer
// endpoint that answers HashKV, the client that asks the peers, and the
// leader's periodic loops.

// peerHashKVPath is etcd's peer endpoint for HashKV. The request is a GET
// whose body is the JSON of an etcdserverpb.HashKVRequest; the answer is the
// JSON of a HashKVResponse whose header holds only the revision. cairn and
// etcd members can check each other through it.
const peerHashKVPath = "/members/hashkv"

// hashKVHandler answers peerHashKVPath as etcd does, statuses and error
// bodies included: the client side (hashFetcher.fetch) recognises the
// compacted and future revision errors by their text.
type hashKVHandler struct {
	clusterID uint64
	hash      func(rev int64) (mvcc.KeyValueHash, int64, error)
	lg        *zap.Logger
}

func (h hashKVHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cid := strconv.FormatUint(h.clusterID, 16)
	req, refusal := h.readRequest(r, cid)
	if refusal == nil {
		var answer []byte
		answer, refusal = h.answer(req)
		if refusal == nil {
			w.Header().Set("X-Etcd-Cluster-ID", cid)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(answer)
			return
		}
	}
	if refusal.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodGet)
	}
	http.Error(w, refusal.text, refusal.status)
}

// httpRefusal is an HTTP error answer: its status and body.
type httpRefusal struct {
	status int
	text   string
}

// readHashKVRequest checks the method, path and cluster ID of a hash
// request and decodes its JSON body.
func (h hashKVHandler) readRequest(r *http.Request, cid string) (*pb.HashKVRequest, *httpRefusal) {
	switch {
	case r.Method != http.MethodGet:
		return nil, &httpRefusal{http.StatusMethodNotAllowed, "Method Not Allowed"}
	case r.URL.Path != peerHashKVPath:
		return nil, &httpRefusal{http.StatusBadRequest, "bad path"}
	}
	if sender := r.Header.Get("X-Etcd-Cluster-ID"); sender != "" && sender != cid {
		return nil, &httpRefusal{http.StatusPreconditionFailed, peer.ErrClusterIDMismatch.Error()}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, &httpRefusal{http.StatusBadRequest, "error reading body"}
	}
	req := &pb.HashKVRequest{}
	if err := json.Unmarshal(body, req); err != nil {
		h.lg.Warn("failed to unmarshal request", zap.Error(err))
		return nil, &httpRefusal{http.StatusBadRequest, "error unmarshalling request"}
	}
	return req, nil
}

// answerHashKV hashes the key space at the asked revision and encodes the
// answer; the header carries only the member's current revision.
func (h hashKVHandler) answer(req *pb.HashKVRequest) ([]byte, *httpRefusal) {
	kvh, rev, err := h.hash(req.Revision)
	if err != nil {
		h.lg.Warn("failed to get hashKV", zap.Int64("requested-revision", req.Revision), zap.Error(err))
		return nil, &httpRefusal{http.StatusBadRequest, err.Error()}
	}
	out, err := json.Marshal(&pb.HashKVResponse{
		Header: &pb.ResponseHeader{Revision: rev}, Hash: kvh.Hash,
		CompactRevision: kvh.CompactRevision, HashRevision: kvh.Revision,
	})
	if err != nil {
		h.lg.Warn("failed to marshal hashKV response", zap.Error(err))
		return nil, &httpRefusal{http.StatusInternalServerError, err.Error()}
	}
	return out, nil
}

// hashFetcher asks the other members for their HashKV over their peer URLs.
type hashFetcher struct {
	self, clusterID uint64
	members         func() []*membership.Member
	http            *http.Client
	timeout         time.Duration
	stop            <-chan struct{}
	lg              *zap.Logger
}

// fetch asks the member at peerURL for HashKV at rev. The errors etcd's
// checks tell apart come back as rpctypes.ErrCompacted, ErrFutureRev and
// ErrClusterIDMismatch.
func (f *hashFetcher) fetch(ctx context.Context, peerURL string, rev int64) (*pb.HashKVResponse, error) {
	body, err := json.Marshal(&pb.HashKVRequest{Revision: rev})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, peerURL+peerHashKVPath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Etcd-Cluster-ID", strconv.FormatUint(f.clusterID, 16))
	resp, err := f.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusBadRequest && strings.Contains(string(b), errs.ErrCompacted.Error()):
		return nil, rpctypes.ErrCompacted
	case resp.StatusCode == http.StatusBadRequest && strings.Contains(string(b), errs.ErrFutureRev.Error()):
		return nil, rpctypes.ErrFutureRev
	case resp.StatusCode == http.StatusPreconditionFailed && strings.Contains(string(b), peer.ErrClusterIDMismatch.Error()):
		return nil, rpctypes.ErrClusterIDMismatch
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("unknown error: %s", b)
	}
	out := &pb.HashKVResponse{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, err
	}
	return out, nil
}

// peerHashes asks every other member for HashKV at rev, trying each of its
// peer URLs until one answers.
func (f *hashFetcher) peerHashes(rev int64) []peerHash {
	var out []peerHash
	for _, m := range f.members() {
		if m.ID == f.self || len(m.PeerURLs) == 0 {
			continue
		}
		p := peerHash{id: m.ID, urls: m.PeerURLs}
		for _, u := range m.PeerURLs {
			ctx, cancel := contextUntil(f.stop, f.timeout)
			p.resp, p.err = f.fetch(ctx, u, rev)
			cancel()
			if p.err == nil {
				break
			}
			f.lg.Warn("failed hash kv request", zap.String("local-member-id", idHex(f.self)),
				zap.Int64("requested-revision", rev), zap.String("remote-peer-endpoint", u), zap.Error(p.err))
		}
		out = append(out, p)
	}
	return out
}

// contextUntil returns a context that ends after timeout or when stop is
// closed, whichever comes first.
func contextUntil(stop <-chan struct{}, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// triggerCorruptAlarm proposes a CORRUPT alarm for member id (0: the whole
// cluster) without waiting for it.
func (m memberHashes) triggerCorruptAlarm(id uint64) {
	s := m.s
	s.goAttach(func() {
		ctx, cancel := contextUntil(s.stopc, s.cfg.requestTimeout())
		defer cancel()
		a := &pb.AlarmRequest{MemberID: id, Action: pb.AlarmRequest_ACTIVATE, Alarm: pb.AlarmType_CORRUPT}
		if _, err := s.props.proposeRequest(ctx, &pb.InternalRaftRequest{Alarm: a}); err != nil {
			s.lg.Warn("failed to raise the CORRUPT alarm", zap.String("member-id", idHex(id)), zap.Error(err))
		}
	})
}

// memberHashes adapts the member to the checks' hashSource.
type memberHashes struct {
	s     *Server
	peers *hashFetcher
}

func (m memberHashes) HashByRev(rev int64) (mvcc.KeyValueHash, int64, error) {
	return m.s.stores.hashByRev(rev)
}

func (m memberHashes) Hashes() []mvcc.KeyValueHash { return m.s.stores.hashes() }

func (m memberHashes) memberID() uint64                { return m.s.id }
func (m memberHashes) reqTimeout() time.Duration       { return m.s.cfg.requestTimeout() }
func (m memberHashes) peerHashes(rev int64) []peerHash { return m.peers.peerHashes(rev) }
func (m memberHashes) linearizableReadNotify(ctx context.Context) error {
	return m.s.linearizableReadNotify(ctx)
}

// CheckInitialHashKV is the initial corruption check (feature gate
// InitialCorruptCheck): call it after New and before Start. It returns
// "<member id> found data inconsistency with peers" when a peer at the
// same compact revision hashes this member's revision differently.
func (s *Server) CheckInitialHashKV() error {
	return s.corruption.initialCheck()
}

// runPeriodicCheck runs the periodic check every interval (0: never) while
// leads says this member leads, until stop.
func (c *corruptionChecker) runPeriodicCheck(interval time.Duration, leads func() bool, stop <-chan struct{}) {
	if interval <= 0 {
		return
	}
	c.lg.Info("enabled corruption checking", zap.String("local-member-id", idHex(c.src.memberID())), zap.Duration("interval", interval))
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			c.lg.Info("server has stopped; stopping kv hash's monitor")
			return
		case <-ticker.C:
		}
		if !leads() {
			continue
		}
		if err := c.periodicCheck(); err != nil {
			c.lg.Warn("failed to check hash KV", zap.Error(err))
		}
	}
}

// runCompactHashCheck runs the compaction hash check every interval while
// leads says this member leads, until stop.
func (c *corruptionChecker) runCompactHashCheck(interval time.Duration, leads func() bool, stop <-chan struct{}) {
	for {
		select {
		case <-time.After(interval):
		case <-stop:
			c.lg.Info("server has stopped; stopping compact hash's monitor")
			return
		}
		if leads() {
			c.compactHashCheck()
		}
	}
}
