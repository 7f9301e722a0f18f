package diskformat

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

// bigValues puts this many values of bigValueSize bytes so that more than
// one 64 MB WAL segment is written.
const (
	bigValues    = 66
	bigValueSize = 1000 * 1000
)

// workload writes a deterministic mix of requests under prefix: puts,
// overwrites, single and range deletes, a txn, a physical compaction and
// enough further puts to cross several --snapshot-count 50 boundaries. With
// big it also writes more than a WAL segment's worth of data before the
// compaction. It returns the compaction revision.
func workload(t *testing.T, cli *clientv3.Client, prefix string, big bool) int64 {
	t.Helper()
	ctx := ctxT(t)
	put := func(k, v string) int64 {
		t.Helper()
		r, err := cli.Put(ctx, prefix+k, v)
		if err != nil {
			t.Fatalf("put %s%s: %v", prefix, k, err)
		}
		return r.Header.Revision
	}
	for i := 0; i < 60; i++ {
		put(fmt.Sprintf("k%03d", i), fmt.Sprintf("v0-%d", i))
	}
	for i := 0; i < 20; i++ {
		put(fmt.Sprintf("k%03d", i), fmt.Sprintf("v1-%d", i))
	}
	if big {
		val := strings.Repeat("x", bigValueSize-3)
		for i := 0; i < bigValues; i++ {
			put("big", fmt.Sprintf("%03d%s", i, val))
		}
	}
	for i := 40; i < 50; i++ {
		if _, err := cli.Delete(ctx, fmt.Sprintf("%sk%03d", prefix, i)); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := cli.Delete(ctx, prefix+"k050", clientv3.WithRange(prefix+"k055")); err != nil || r.Deleted != 5 {
		t.Fatalf("delete range: %v %v", r, err)
	}
	tr, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(prefix+"k000"), "=", "v1-0"),
			clientv3.Compare(clientv3.Version(prefix+"k001"), "=", 2)).
		Then(clientv3.OpPut(prefix+"k000", "txn"), clientv3.OpDelete(prefix+"k001"), clientv3.OpPut(prefix+"new", "n")).
		Else(clientv3.OpPut(prefix+"never", "x")).
		Commit()
	if err != nil || !tr.Succeeded {
		t.Fatalf("txn: %v succeeded=%v", err, tr != nil && tr.Succeeded)
	}
	var rev int64
	for i := 0; i < 5; i++ {
		rev = put("c", fmt.Sprintf("c%d", i))
	}
	compactRev := rev - 2
	if _, err := cli.Compact(ctx, compactRev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("compact %d: %v", compactRev, err)
	}
	for i := 0; i < 200; i++ {
		put(fmt.Sprintf("f%02d", i%20), fmt.Sprintf("f%d", i))
	}
	return compactRev
}

// kvRec is one key as a client sees it; long values are kept as a digest.
type kvRec struct {
	Key                  string
	Value                string
	Create, Mod, Version int64
	Lease                int64
}

func recs(kvs []*mvccpb.KeyValue) []kvRec {
	out := make([]kvRec, 0, len(kvs))
	for _, kv := range kvs {
		v := string(kv.Value)
		if len(v) > 64 {
			v = fmt.Sprintf("sha256:%x(len %d)", sha256.Sum256(kv.Value), len(kv.Value))
		}
		out = append(out, kvRec{string(kv.Key), v, kv.CreateRevision, kv.ModRevision, kv.Version, kv.Lease})
	}
	return out
}

// state is everything a client can observe of a member's data.
type state struct {
	MemberID, ClusterID uint64
	Rev                 int64
	CompactRev          int64
	All                 []kvRec // every key at the head revision
	AtCompact           []kvRec // every key at the compaction revision
	Hash                uint32  // HashKV at the head
	HashRev             int64
	HashCompactRev      int64
	HashMid             uint32 // HashKV at the revision after the compaction
}

// capture reads the state of the member m serves through cli. It also
// checks that revisions before compactRev are compacted.
func capture(t *testing.T, m *member, cli *clientv3.Client, compactRev int64) state {
	t.Helper()
	ctx := ctxT(t)
	var s state
	st, err := cli.Status(ctx, m.clientURL)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	s.MemberID, s.ClusterID = st.Header.MemberId, st.Header.ClusterId
	all, err := cli.Get(ctx, "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatalf("get all: %v", err)
	}
	s.Rev, s.All, s.CompactRev = all.Header.Revision, recs(all.Kvs), compactRev
	at, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithRev(compactRev))
	if err != nil {
		t.Fatalf("get all at compaction revision %d: %v", compactRev, err)
	}
	s.AtCompact = recs(at.Kvs)
	if _, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithRev(compactRev-1)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("%s: get at revision %d (before compaction at %d): err=%v, want %v", m.kind, compactRev-1, compactRev, err, rpctypes.ErrCompacted)
	}
	h, err := cli.HashKV(ctx, m.clientURL, 0)
	if err != nil {
		t.Fatalf("hashkv: %v", err)
	}
	s.Hash, s.HashRev, s.HashCompactRev = h.Hash, h.HashRevision, h.CompactRevision
	// Not at compactRev itself: etcd answers that one from a hash it cached
	// while compacting, which a restarted etcd no longer has.
	hm, err := cli.HashKV(ctx, m.clientURL, compactRev+1)
	if err != nil {
		t.Fatalf("hashkv at %d: %v", compactRev+1, err)
	}
	s.HashMid = hm.Hash
	return s
}

// sameState fails t for every difference between want (what the writer
// served) and got (what the reader serves); withIDs also compares member and
// cluster ID.
func sameState(t *testing.T, what string, want, got state, withIDs bool) {
	t.Helper()
	if withIDs && (want.MemberID != got.MemberID || want.ClusterID != got.ClusterID) {
		t.Errorf("%s: member/cluster ID = %x/%x, want %x/%x", what, got.MemberID, got.ClusterID, want.MemberID, want.ClusterID)
	}
	if want.Rev != got.Rev {
		t.Errorf("%s: revision = %d, want %d", what, got.Rev, want.Rev)
	}
	if want.Hash != got.Hash || want.HashRev != got.HashRev || want.HashCompactRev != got.HashCompactRev {
		t.Errorf("%s: HashKV = {hash %d rev %d compact %d}, want {hash %d rev %d compact %d}",
			what, got.Hash, got.HashRev, got.HashCompactRev, want.Hash, want.HashRev, want.HashCompactRev)
	}
	if want.HashMid != got.HashMid {
		t.Errorf("%s: HashKV at revision %d = %d, want %d", what, want.CompactRev+1, got.HashMid, want.HashMid)
	}
	diffRecs(t, what+" (head)", want.All, got.All)
	diffRecs(t, fmt.Sprintf("%s (at revision %d)", what, want.CompactRev), want.AtCompact, got.AtCompact)
}

func diffRecs(t *testing.T, what string, want, got []kvRec) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("%s: %d keys, want %d", what, len(got), len(want))
	}
	shown := 0
	for i := 0; i < len(want) && i < len(got) && shown < 5; i++ {
		if want[i] != got[i] {
			t.Errorf("%s: key #%d = %+v, want %+v", what, i, got[i], want[i])
			shown++
		}
	}
}

// writesFurther checks that the member takes and serves a new write right
// after the revision rev it took over.
func writesFurther(t *testing.T, m *member, cli *clientv3.Client, rev int64) {
	t.Helper()
	ctx := ctxT(t)
	key := fmt.Sprintf("after/%s/%d", m.kind, rev)
	p, err := cli.Put(ctx, key, "more")
	if err != nil {
		t.Fatalf("%s: put after takeover: %v", m.kind, err)
	}
	if p.Header.Revision != rev+1 {
		t.Errorf("%s: put after takeover at revision %d, want %d", m.kind, p.Header.Revision, rev+1)
	}
	g, err := cli.Get(ctx, key)
	if err != nil || len(g.Kvs) != 1 || string(g.Kvs[0].Value) != "more" || g.Kvs[0].CreateRevision != rev+1 {
		t.Errorf("%s: get after put: %v %v", m.kind, g, err)
	}
}

// waitPurged waits (bounded) until the member's purge loop has removed the
// first WAL segment and kept at most 2 .snap files (--max-snapshots 2).
func waitPurged(t *testing.T, m *member) {
	t.Helper()
	var wals, snaps []string
	if !harness.Poll(75*time.Second, 200*time.Millisecond, func() bool {
		wals = listFiles(t, m.walDir(), ".wal")
		snaps = listFiles(t, m.snapDir(), ".snap")
		return len(wals) == 1 && wals[0] != "0000000000000000-0000000000000000.wal" && len(snaps) <= 2
	}) {
		t.Fatalf("%s: no WAL/snap purge: wal=%v snap=%v; log:\n%s", m.kind, wals, snaps, m.logTail())
	}
}
