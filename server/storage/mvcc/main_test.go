package mvcc

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.uber.org/goleak"

	"github.com/cairnkv/cairn/server/storage/backend"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testConfig keeps compaction rounds small and their pauses short so tests
// exercise several rounds quickly.
var testConfig = StoreConfig{CompactionBatchLimit: 3, CompactionSleepInterval: time.Microsecond}

// newTestStore opens a store on a fresh temporary backend; both are closed
// when the test ends.
func newTestStore(tb testing.TB, cfg StoreConfig) (*Store, backend.Backend, string) {
	tb.Helper()
	b, path := backend.NewTmpBackend(tb)
	s := New(nil, b, cfg)
	tb.Cleanup(func() { s.Close() })
	return s, b, path
}

// reopen closes s and its backend (after committing) and opens both again on
// the same file, as a member restart does.
func reopen(tb testing.TB, s *Store, b backend.Backend, path string, cfg StoreConfig) (*Store, backend.Backend) {
	tb.Helper()
	s.Close()
	b.Commit()
	if err := b.Close(); err != nil {
		tb.Fatalf("close backend: %v", err)
	}
	nb, err := backend.Open(backend.Config{Path: path})
	if err != nil {
		tb.Fatalf("reopen backend: %v", err)
	}
	ns := New(nil, nb, cfg)
	tb.Cleanup(func() {
		ns.Close()
		nb.Close()
	})
	return ns, nb
}

func mustRange(tb testing.TB, kv ReadView, key, end string, ro RangeOptions) *RangeResult {
	tb.Helper()
	res, err := kv.Range(context.Background(), []byte(key), rangeEnd(end), ro)
	if err != nil {
		tb.Fatalf("Range(%q, %q, %+v): %v", key, end, ro, err)
	}
	return res
}

// rangeEnd maps "" to nil (single key) so tests can write ranges as strings.
func rangeEnd(end string) []byte {
	if end == "" {
		return nil
	}
	return []byte(end)
}

func waitCompaction(tb testing.TB, done <-chan struct{}) {
	tb.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		tb.Fatal("compaction did not finish")
	}
}

// kvString renders KVs compactly for comparisons in failure messages.
func kvString(kvs []*mvccpb.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = string(kv.Key) + "=" + string(kv.Value) +
			"@" + itoa(kv.CreateRevision) + "/" + itoa(kv.ModRevision) + "/v" + itoa(kv.Version) + "/l" + itoa(kv.Lease)
	}
	return out
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
