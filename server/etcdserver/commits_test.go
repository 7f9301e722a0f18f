package etcdserver

import (
	"os"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// newTestCommits is a backendCommits over a bare backend whose pre-commit
// hook is the commits' own, as the member wires it.
func newTestCommits(t *testing.T, stop <-chan struct{}) *backendCommits {
	t.Helper()
	c := &backendCommits{stores: &stores{}, kick: make(chan struct{}, 1), interval: time.Hour, stop: stop}
	cfg := &Config{DataDir: t.TempDir(), Logger: zap.NewNop()}
	if err := os.MkdirAll(cfg.snapDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	be, err := openBackend(cfg, backendHooks{preCommit: c.saveConsistentIndex})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	c.stores.be = be
	return c
}

// Every commit carries the consistent index and term set under the apply
// lock; a background commit without pending writes is skipped.
func TestBackendCommitsCarryTheConsistentIndex(t *testing.T) {
	c := newTestCommits(t, nil)
	readIndex := func() (uint64, uint64) {
		tx := c.stores.be.ReadTx()
		tx.RLock()
		defer tx.RUnlock()
		ci, _ := backend.ReadUint64(tx, backend.BucketMeta, backend.MetaConsistentIndex)
		term, _ := backend.ReadUint64(tx, backend.BucketMeta, backend.MetaTerm)
		return ci, term
	}
	c.mu.Lock()
	c.index, c.term = 7, 2
	c.mu.Unlock()
	c.commitInBackground() // nothing pending: no commit
	if ci, _ := readIndex(); ci != 0 {
		t.Errorf("background commit without writes stored index %d", ci)
	}
	c.commit()
	if ci, term := readIndex(); ci != 7 || term != 2 {
		t.Errorf("stored index %d term %d, want 7 and 2", ci, term)
	}
	var seen backend.Backend
	c.withApplyLock(func(be backend.Backend) { seen = be })
	if seen != c.stores.be {
		t.Error("withApplyLock ran on another backend")
	}
}

// A kick has run commit at once, in the background, and the cut carries
// the index set before it; run ends with stop.
func TestBackendCommitsKick(t *testing.T) {
	stop := make(chan struct{})
	c := newTestCommits(t, stop)
	done := make(chan struct{})
	go func() { c.run(); close(done) }()
	c.mu.Lock()
	c.index, c.term = 9, 3
	backend.PutUint64(c.stores.be.BatchTx(), backend.BucketMeta, []byte("k"), 1) // a pending write
	c.mu.Unlock()
	before := c.stores.be.CommitID().TxID
	c.kickCommit()
	for c.stores.be.CommitID().TxID == before { // the interval is an hour: only the kick commits
		time.Sleep(time.Millisecond)
	}
	close(stop)
	<-done
	tx := c.stores.be.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	if ci, _ := backend.ReadUint64(tx, backend.BucketMeta, backend.MetaConsistentIndex); ci != 9 {
		t.Fatalf("kicked commit stored index %d, want 9", ci)
	}
}
