package cairnutl

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestRestoreClusterOneCommand snapshots a cairn member while a writer is
// running, restores a three-member cluster with one `snapshot
// restore-cluster` (default bump and compaction), and checks that the
// members serve every key at the bumped revision, refuse watches from before
// it, and agree on the KV hash.
func TestRestoreClusterOneCommand(t *testing.T) {
	srcM := member{name: "src", peerURL: peerURL(t), dataDir: filepath.Join(t.TempDir(), "src")}
	src := startServer(t, "cairn", cairnBin, srcM, []member{srcM})
	cli := src.client(t)

	// A fixed base the snapshot certainly holds.
	base := map[string]string{}
	for i := range 20 {
		k, v := fmt.Sprintf("base/%02d", i), fmt.Sprintf("v%d", i)
		if _, err := cli.Put(ctx(t), k, v); err != nil {
			t.Fatal(err)
		}
		base[k] = v
	}
	if _, err := cli.Delete(ctx(t), "base/00"); err != nil {
		t.Fatal(err)
	}
	delete(base, "base/00")
	baseResp, err := cli.Get(ctx(t), "base/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	baseRev := baseResp.Header.Revision

	// A writer putting load/NNNNN = N, one revision each, during the snapshot.
	var stop atomic.Bool
	var acked atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := int64(0); !stop.Load(); i++ {
			if _, err := cli.Put(ctx(t), fmt.Sprintf("load/%05d", i), fmt.Sprint(i)); err != nil {
				t.Errorf("load put %d: %v", i, err)
				return
			}
			acked.Store(i + 1)
		}
	}()
	for acked.Load() < 20 && !t.Failed() {
		time.Sleep(time.Millisecond)
	}
	ackedBefore := acked.Load()
	snapPath := filepath.Join(t.TempDir(), "cluster.snapshot")
	err = saveSnapshot(t, cli, snapPath)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if err := src.stop(); err != nil {
		t.Fatal(err)
	}

	ms := members(t, 3)
	prefix := t.TempDir()
	res := run(t, cairnutlBin, "snapshot", "restore-cluster", snapPath, "--initial-cluster", initialCluster(ms),
		"--initial-cluster-token", "cairnutl-compat", "--data-dir-prefix", prefix)
	if res.code != 0 {
		t.Fatalf("restore-cluster: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != len(ms) {
		t.Fatalf("want one line per member, got:\n%s", res.stdout)
	}
	for i := range ms {
		ms[i].dataDir = filepath.Join(prefix, ms[i].name+".etcd")
		if !strings.Contains(lines[i], ms[i].dataDir) {
			t.Errorf("line %d %q does not name %s", i, lines[i], ms[i].dataDir)
		}
	}

	srvs := startCluster(t, []string{"cairn", "cairn", "cairn"}, ms)
	const bump = 1_000_000_000
	var snapRev, loadKeys int64 = -1, -1
	for _, s := range srvs {
		kvs, rev, err := readAll(t, s.client(t))
		if err != nil {
			t.Fatalf("%s: %v", s.endpoint, err)
		}
		// Every base key, and a gap-free prefix of the load no shorter
		// than what was acknowledged before the snapshot started.
		var n int64
		for k, v := range kvs {
			if strings.HasPrefix(k, "load/") {
				n++
				continue
			}
			if base[k] != v {
				t.Errorf("%s: unexpected %s=%s", s.endpoint, k, v)
			}
		}
		for k, v := range base {
			if kvs[k] != v {
				t.Errorf("%s: %s=%q, want %q", s.endpoint, k, kvs[k], v)
			}
		}
		for i := range n {
			if v := kvs[fmt.Sprintf("load/%05d", i)]; v != fmt.Sprint(i) {
				t.Errorf("%s: load/%05d=%q", s.endpoint, i, v)
			}
		}
		if n < ackedBefore {
			t.Errorf("%s: %d load keys, but %d were acknowledged before the snapshot", s.endpoint, n, ackedBefore)
		}
		if want := baseRev + n + bump; rev != want {
			t.Errorf("%s: revision %d, want %d (base %d + %d load puts + bump %d)", s.endpoint, rev, want, baseRev, n, bump)
		}
		if loadKeys >= 0 && (n != loadKeys || rev != snapRev) {
			t.Errorf("%s: %d load keys at %d, another member has %d at %d", s.endpoint, n, rev, loadKeys, snapRev)
		}
		loadKeys, snapRev = n, rev
	}
	if t.Failed() {
		t.FailNow()
	}

	// A watch from any revision a client could have seen is compacted.
	for _, s := range srvs {
		wctx := ctx(t)
		wc := s.client(t).Watch(wctx, "base/", clientv3.WithPrefix(), clientv3.WithRev(baseRev))
		wr, ok := <-wc
		if !ok {
			t.Fatalf("%s: watch closed without a response", s.endpoint)
		}
		if wr.CompactRevision != snapRev || !errors.Is(wr.Err(), rpctypes.ErrCompacted) {
			t.Errorf("%s: watch from %d: compact revision %d err %v; want %d and %v",
				s.endpoint, baseRev, wr.CompactRevision, wr.Err(), snapRev, rpctypes.ErrCompacted)
		}
		if _, err := s.client(t).Get(ctx(t), "base/01", clientv3.WithRev(snapRev-1)); !errors.Is(err, rpctypes.ErrCompacted) {
			t.Errorf("%s: read below the bumped revision: %v, want %v", s.endpoint, err, rpctypes.ErrCompacted)
		}
	}

	// The members agree on the KV hash at the restored revision.
	var hash uint32
	for i, s := range srvs {
		h, err := s.client(t).HashKV(ctx(t), s.endpoint, snapRev)
		if err != nil {
			t.Fatalf("%s: HashKV: %v", s.endpoint, err)
		}
		if h.CompactRevision != snapRev || h.Header.Revision != snapRev {
			t.Errorf("%s: HashKV compact revision %d, revision %d; want %d", s.endpoint, h.CompactRevision, h.Header.Revision, snapRev)
		}
		if i > 0 && h.Hash != hash {
			t.Errorf("%s: HashKV %x, first member %x", s.endpoint, h.Hash, hash)
		}
		hash = h.Hash
	}

	// And the cluster takes writes after the bumped revision.
	put, err := srvs[1].client(t).Put(ctx(t), "after-restore", "x")
	if err != nil || put.Header.Revision != snapRev+1 {
		t.Fatalf("put after restore: %v %v, want revision %d", put, err, snapRev+1)
	}
	checkMembers(t, srvs[2], ms)
}
