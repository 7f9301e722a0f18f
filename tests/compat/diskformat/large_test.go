package diskformat

import (
	"context"
	"crypto/sha256"
	"fmt"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// largeKeys is how many keys TestHandoverLargeStore writes, twice each: at
// this size the key bucket spans thousands of bbolt pages and the index
// rebuild works through many batches.
const largeKeys = 200_000

// TestHandoverLargeStore writes largeKeys keys in two versions and compacts
// the first version away, then hands the data dir to the other server, which
// must serve the same state and HashKV. It also checks that cairn's db file
// is no bigger than etcd's for the same writes (both pack the key bucket's
// pages the same way). Skipped with -short: it writes 400k keys per server.
func TestHandoverLargeStore(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 400,000 keys per server")
	}
	sizes := map[kind]int64{}
	for _, tt := range []struct{ from, to kind }{{cairn, etcd}, {etcd, cairn}} {
		t.Run(fmt.Sprintf("%s_to_%s", tt.from, tt.to), func(t *testing.T) {
			m := newMember(t, "--quota-backend-bytes", "8589934592")
			m.start(tt.from)
			cli := m.client()
			compactRev := putVersion(t, cli, 1)
			putVersion(t, cli, 2)
			ctx, cancel := context.WithTimeout(context.Background(), largeTimeout)
			defer cancel()
			if _, err := cli.Compact(ctx, compactRev, clientv3.WithCompactPhysical()); err != nil {
				t.Fatalf("compact: %v", err)
			}
			want := captureLarge(t, m, cli, compactRev)
			cli.Close()
			m.stop(syscall.SIGTERM)
			sizes[tt.from] = fileSize(t, m.dbPath())

			m.start(tt.to)
			cli = m.client()
			got := captureLarge(t, m, cli, compactRev)
			if got != want {
				t.Errorf("%s serving %s's %d keys: %+v, want %+v", tt.to, tt.from, largeKeys, got, want)
			}
			writesFurther(t, m, cli, want.Rev)
			cli.Close()
		})
	}
	if sizes[cairn] > sizes[etcd]*105/100 {
		t.Errorf("db file: cairn %d bytes, etcd %d bytes for the same writes", sizes[cairn], sizes[etcd])
	}
	t.Logf("db file after the same writes: cairn %d bytes, etcd %d bytes", sizes[cairn], sizes[etcd])
}

// putVersion writes every key once more, in transactions of 128 puts sent
// by a few clients at a time, and returns the revision reached.
func putVersion(t *testing.T, cli *clientv3.Client, version int) int64 {
	t.Helper()
	const opsPerTxn, senders = 128, 8
	value := fmt.Sprintf("version-%d-%0200d", version, 0)
	firsts := make(chan int)
	errc := make(chan error, senders)
	for range senders {
		go func() {
			var err error
			for first := range firsts {
				ops := make([]clientv3.Op, 0, opsPerTxn)
				for i := first; i < min(first+opsPerTxn, largeKeys); i++ {
					ops = append(ops, clientv3.OpPut(fmt.Sprintf("large/%08d", i), value))
				}
				if _, e := cli.Txn(ctxT(t)).Then(ops...).Commit(); e != nil && err == nil {
					err = e
				}
			}
			errc <- err
		}()
	}
	for first := 0; first < largeKeys; first += opsPerTxn {
		firsts <- first
	}
	close(firsts)
	for range senders {
		if err := <-errc; err != nil {
			t.Fatalf("writing version %d: %v", version, err)
		}
	}
	r, err := cli.Get(ctxT(t), "large/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count != largeKeys {
		t.Fatalf("after version %d: count %v, %v", version, r, err)
	}
	return r.Header.Revision
}

// largeState is what a client observes of a large store: every key is
// folded into a digest so that states compare in one step.
type largeState struct {
	MemberID, ClusterID uint64
	Rev                 int64
	HeadDigest          string // every key at the head revision
	CompactDigest       string // every key at the compaction revision
	Hash, HashMid       uint32 // HashKV at the head and after the compaction
	HashCompactRev      int64
}

// largeTimeout bounds each read of the whole store.
const largeTimeout = 5 * time.Minute

func captureLarge(t *testing.T, m *member, cli *clientv3.Client, compactRev int64) largeState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), largeTimeout)
	defer cancel()
	st, err := cli.Status(ctx, m.clientURL)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	s := largeState{MemberID: st.Header.MemberId, ClusterID: st.Header.ClusterId, Rev: st.Header.Revision}
	s.HeadDigest = digestAt(ctx, t, cli, s.Rev)
	s.CompactDigest = digestAt(ctx, t, cli, compactRev)
	h, err := cli.HashKV(ctx, m.clientURL, 0)
	if err != nil {
		t.Fatalf("hashkv: %v", err)
	}
	s.Hash, s.HashCompactRev = h.Hash, h.CompactRevision
	if h, err = cli.HashKV(ctx, m.clientURL, compactRev+1); err != nil {
		t.Fatalf("hashkv at %d: %v", compactRev+1, err)
	}
	s.HashMid = h.Hash
	return s
}

// digestAt reads every key at rev in pages and returns a digest of them.
func digestAt(ctx context.Context, t *testing.T, cli *clientv3.Client, rev int64) string {
	t.Helper()
	const page = 20000
	d := sha256.New()
	n, from := 0, "\x00"
	for {
		r, err := cli.Get(ctx, from, clientv3.WithFromKey(), clientv3.WithRev(rev), clientv3.WithLimit(page))
		if err != nil {
			t.Fatalf("get from %q at %d: %v", from, rev, err)
		}
		for _, kv := range r.Kvs {
			fmt.Fprintf(d, "%q=%x@%d/%d/v%d/l%d\n", kv.Key, sha256.Sum256(kv.Value), kv.CreateRevision, kv.ModRevision, kv.Version, kv.Lease)
		}
		n += len(r.Kvs)
		if !r.More {
			return fmt.Sprintf("%d keys sha256:%x", n, d.Sum(nil))
		}
		from = string(r.Kvs[len(r.Kvs)-1].Key) + "\x00"
	}
}
