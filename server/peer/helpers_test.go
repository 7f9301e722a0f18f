package peer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitLimit bounds every wait in these tests; nothing waits on a sleep.
const waitLimit = 10 * time.Second

// recorder is a fake Raft that records what the transport hands it. Its
// events (received messages and snapshot saves) share one log so tests can
// check their order.
type recorder struct {
	mu          sync.Mutex
	events      []string
	msgs        []*raftpb.Message
	unreachable int
	snapshots   []raft.SnapshotStatus
	removed     map[uint64]bool
	changed     chan struct{}
	// raftLoopBusy, when set, makes ReportUnreachable wait until it is
	// closed, as a member's does while its raft loop is inside Send.
	raftLoopBusy chan struct{}
}

func newRecorder() *recorder {
	return &recorder{removed: map[uint64]bool{}, changed: make(chan struct{}, 1)}
}

func (r *recorder) update(f func()) {
	r.mu.Lock()
	f()
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) Process(_ context.Context, m *raftpb.Message) error {
	r.update(func() {
		r.msgs = append(r.msgs, m)
		r.events = append(r.events, "process "+m.GetType().String())
	})
	return nil
}

func (r *recorder) IsIDRemoved(id uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removed[id]
}

func (r *recorder) ReportUnreachable(uint64) {
	if r.raftLoopBusy != nil {
		<-r.raftLoopBusy
	}
	r.update(func() { r.unreachable++ })
}

func (r *recorder) ReportSnapshot(_ uint64, s raft.SnapshotStatus) {
	r.update(func() { r.snapshots = append(r.snapshots, s) })
}

func (r *recorder) setRemoved(id uint64) { r.update(func() { r.removed[id] = true }) }

func (r *recorder) received() []*raftpb.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*raftpb.Message(nil), r.msgs...)
}

// waitUntil waits for cond to hold, re-checking whenever the recorder
// changes and at least every 10ms (for conditions outside it).
func (r *recorder) waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// memStore is a fake SnapshotStore: it sends db and records what it saves
// into the recorder's event log.
type memStore struct {
	rec     *recorder
	db      []byte
	saveErr error
	saved   bytes.Buffer
	index   uint64
}

func (s *memStore) OpenSnapshot(*raftpb.Message) (io.ReadCloser, int64, error) {
	return io.NopCloser(bytes.NewReader(s.db)), int64(len(s.db)), nil
}

func (s *memStore) SaveSnapshotDB(r io.Reader, index uint64) (int64, error) {
	if s.saveErr != nil {
		return 0, s.saveErr
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, r)
	s.rec.update(func() {
		s.saved, s.index = buf, index
		s.rec.events = append(s.rec.events, "save db")
	})
	return n, err
}

// member is one Transport served on a loopback HTTP server.
type member struct {
	id    uint64
	url   string
	tr    *Transport
	rec   *recorder
	store *memStore
	srv   *httptest.Server
}

func newMember(t *testing.T, id, clusterID uint64) *member {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	m := &member{id: id, url: "http://" + srv.Listener.Addr().String(), rec: newRecorder(), srv: srv}
	m.store = &memStore{rec: m.rec}
	m.tr = New(Config{ID: id, ClusterID: clusterID, URLs: []string{m.url}, Raft: m.rec,
		Snapshots: m.store, Logger: zaptest.NewLogger(t), ServerVersion: "3.7.1", MinClusterVersion: "3.0.0"})
	srv.Config.Handler = m.tr.Handler()
	srv.Start()
	if err := m.tr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.stop)
	return m
}

func (m *member) stop() {
	m.tr.Stop()
	m.srv.Close()
}

// connect makes every member a peer of every other.
func connect(members ...*member) {
	for _, a := range members {
		for _, b := range members {
			if a != b {
				a.tr.AddPeer(b.id, []string{b.url})
			}
		}
	}
}

// waitStreams waits until a's streams to b are both up.
func waitStreams(t *testing.T, a *member, b uint64) {
	t.Helper()
	a.rec.waitUntil(t, "streams up", func() bool {
		p := a.tr.peer(b)
		if p == nil {
			return false
		}
		appUp := p.msgAppWriter.sendQueue() != nil
		msgUp := p.msgWriter.sendQueue() != nil
		return appUp && msgUp
	})
}

func msg(typ raftpb.MessageType, from, to, term, index uint64) *raftpb.Message {
	return &raftpb.Message{Type: typ.Enum(), From: proto.Uint64(from), To: proto.Uint64(to),
		Term: proto.Uint64(term), Index: proto.Uint64(index)}
}

// appendMsg is a MsgApp as raft builds it, carrying n entries of size bytes.
func appendMsg(from, to, term, prevIndex uint64, n, size int) *raftpb.Message {
	m := msg(raftpb.MsgApp, from, to, term, prevIndex)
	m.LogTerm = proto.Uint64(term)
	m.Commit = proto.Uint64(prevIndex)
	for i := range n {
		m.Entries = append(m.Entries, &raftpb.Entry{Term: proto.Uint64(term),
			Index: proto.Uint64(prevIndex + uint64(i) + 1), Type: raftpb.EntryNormal.Enum(),
			Data: bytes.Repeat([]byte{byte(i)}, size)})
	}
	return m
}

// doRequest sends a raw request to h and returns the status, body and
// headers of the answer.
func doRequest(t *testing.T, url, method string, hdr http.Header, body []byte) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}
