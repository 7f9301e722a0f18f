package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ackedPut is a put the server acknowledged.
type ackedPut struct {
	key, value string
	rev        int64
}

// writeLoad runs writers goroutines putting unique keys until ctx ends or a
// put fails, and records every acknowledged put. kill is called (once) after
// killAfter acknowledgements, while the writers are still writing.
func writeLoad(t *testing.T, cli *clientv3.Client, prefix string, writers, killAfter int, kill func()) []ackedPut {
	t.Helper()
	loadCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu     sync.Mutex
		acked  []ackedPut
		count  atomic.Int64
		killed sync.Once
		wg     sync.WaitGroup
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				key := fmt.Sprintf("%s/w%d/%06d", prefix, w, i)
				val := "value-of-" + key
				resp, err := cli.Put(loadCtx, key, val)
				if err != nil {
					return // the member is gone (or the load is over)
				}
				mu.Lock()
				acked = append(acked, ackedPut{key, val, resp.Header.Revision})
				mu.Unlock()
				if count.Add(1) == int64(killAfter) {
					killed.Do(func() {
						kill()
						cancel()
					})
				}
			}
		}()
	}
	wg.Wait()
	if count.Load() < int64(killAfter) {
		t.Fatalf("load stopped after %d acknowledged puts, before the kill", count.Load())
	}
	return acked
}

// verifyAcked checks that every acknowledged put is stored with its value and
// at the revision its put reported.
func verifyAcked(t *testing.T, cli *clientv3.Client, prefix string, acked []ackedPut) {
	t.Helper()
	resp, err := cli.Get(ctx(t), prefix+"/", clientv3.WithPrefix())
	must(t, err)
	stored := make(map[string]*ackedPut, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		stored[string(kv.Key)] = &ackedPut{string(kv.Key), string(kv.Value), kv.ModRevision}
	}
	lost, changed := 0, 0
	for _, a := range acked {
		s, ok := stored[a.key]
		switch {
		case !ok:
			lost++
			if lost <= 10 {
				t.Errorf("acknowledged put %s (revision %d) lost", a.key, a.rev)
			}
		case s.value != a.value || s.rev != a.rev:
			changed++
			if changed <= 10 {
				t.Errorf("%s: stored value %q at revision %d, acknowledged %q at revision %d", a.key, s.value, s.rev, a.value, a.rev)
			}
		}
	}
	if lost > 0 || changed > 0 {
		t.Errorf("of %d acknowledged puts %d are lost and %d differ from what was acknowledged", len(acked), lost, changed)
	}
	// Unacknowledged puts may or may not have landed, but nothing else may.
	if len(stored) < len(acked) {
		t.Errorf("%d keys stored, fewer than %d acknowledged", len(stored), len(acked))
	}
}

func maxRev(acked []ackedPut) int64 {
	var r int64
	for _, a := range acked {
		r = max(r, a.rev)
	}
	return r
}

// crashRounds is the loop the SIGKILL and the power-cut tests share. Each
// round writes under load with keys "<name><round>/...", crashes the member
// with crash after killAfter() acknowledged puts, restarts it, and checks
// that the acknowledged puts of this and every earlier round are stored and
// that the revision did not go back. It stops after the first failing round
// and reports whether every round passed.
func crashRounds(t *testing.T, m *member, rounds int, name, what string, killAfter func() int, crash func()) bool {
	t.Helper()
	var all []ackedPut
	for round := range rounds {
		cli := m.client(t)
		acked := writeLoad(t, cli, fmt.Sprintf("%s%d", name, round), 8, killAfter(), crash)
		cli.Close()
		if m.running() {
			t.Fatalf("member survived the %s", what)
		}
		m.restart()
		cli = m.client(t)
		all = append(all, acked...)
		for r := 0; r <= round; r++ {
			prefix := fmt.Sprintf("%s%d", name, r)
			verifyAcked(t, cli, prefix, filterPrefix(all, prefix+"/"))
		}
		if rev := currentRev(t, cli); rev < maxRev(all) {
			t.Errorf("round %d: revision after the %s and restart %d < highest acknowledged revision %d", round, what, rev, maxRev(all))
		}
		if t.Failed() {
			return false
		}
	}
	return true
}

func TestCrashSafetyUnderLoad(t *testing.T) {
	rounds, killAfter := 3, 400
	if testing.Short() {
		rounds, killAfter = 1, 150
	}
	m := startMember(t, memberOpts{})
	if !crashRounds(t, m, rounds, "crash", "SIGKILL", func() int { return killAfter }, m.kill) {
		return
	}

	// The state recovered from the crash is stable: a clean stop and restart
	// gives the same revision and the same hash.
	cli := m.client(t)
	h1, err := cli.HashKV(ctx(t), m.clientURL, 0)
	must(t, err)
	must(t, m.stop())
	m.restart()
	cli = m.client(t)
	h2, err := cli.HashKV(ctx(t), m.clientURL, 0)
	must(t, err)
	if h1.Hash != h2.Hash || h1.HashRevision != h2.HashRevision || h1.Header.Revision != h2.Header.Revision {
		t.Errorf("hash after crash recovery %d@%d (store rev %d), after clean restart %d@%d (store rev %d)",
			h1.Hash, h1.HashRevision, h1.Header.Revision, h2.Hash, h2.HashRevision, h2.Header.Revision)
	}
	// And the member still takes writes at the next revision.
	if rev := mustPut(t, cli, "after-crash", "ok"); rev != h2.Header.Revision+1 {
		t.Errorf("put after recovery at revision %d, want %d", rev, h2.Header.Revision+1)
	}
}

func filterPrefix(acked []ackedPut, prefix string) []ackedPut {
	var out []ackedPut
	for _, a := range acked {
		if len(a.key) >= len(prefix) && a.key[:len(prefix)] == prefix {
			out = append(out, a)
		}
	}
	return out
}

func TestRestartAfterSnapshots(t *testing.T) {
	n := 1200
	if testing.Short() {
		n = 350
	}
	m := startMember(t, memberOpts{args: []string{"--snapshot-count", "100"}})
	cli := m.client(t)
	var acked []ackedPut
	for i := range n {
		key := fmt.Sprintf("snap/%05d", i%(n/2)) // every key written twice
		val := fmt.Sprintf("v%d", i)
		resp, err := cli.Put(ctx(t), key, val)
		must(t, err)
		acked = append(acked, ackedPut{key, val, resp.Header.Revision})
	}
	latest := latestPerKey(acked)
	rev := int64(n + 1)
	hash, err := cli.HashKV(ctx(t), m.clientURL, 0)
	must(t, err)

	snaps, _ := filepath.Glob(filepath.Join(m.dataDir, "member", "snap", "*.snap"))
	if len(snaps) == 0 {
		t.Errorf("no *.snap files after %d writes with --snapshot-count 100", n)
	}
	wals, _ := filepath.Glob(filepath.Join(m.dataDir, "member", "wal", "*.wal"))
	if len(wals) == 0 {
		t.Errorf("no *.wal files")
	}

	check := func(t *testing.T, how string) {
		cli := m.client(t)
		verifyAcked(t, cli, "snap", latest)
		g, err := cli.Get(ctx(t), "snap/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		must(t, err)
		if g.Count != int64(n/2) || g.Header.Revision != rev {
			t.Errorf("after %s: count=%d revision=%d, want %d %d", how, g.Count, g.Header.Revision, n/2, rev)
		}
		h, err := cli.HashKV(ctx(t), m.clientURL, rev)
		must(t, err)
		if h.Hash != hash.Hash {
			t.Errorf("after %s: hash %d, want %d", how, h.Hash, hash.Hash)
		}
		// History survives too: the first write of key 0 is readable at its revision.
		old, err := cli.Get(ctx(t), acked[0].key, clientv3.WithRev(acked[0].rev))
		must(t, err)
		if len(old.Kvs) != 1 || string(old.Kvs[0].Value) != acked[0].value {
			t.Errorf("after %s: historical read of %s@%d = %v", how, acked[0].key, acked[0].rev, old.Kvs)
		}
	}
	must(t, m.stop())
	m.restart()
	check(t, "clean restart")
	m.kill()
	m.restart()
	check(t, "kill and restart")
	if _, err := os.Stat(filepath.Join(m.dataDir, "member", "snap", "db")); err != nil {
		t.Errorf("backend file: %v", err)
	}
}

func latestPerKey(acked []ackedPut) []ackedPut {
	idx := map[string]int{}
	var out []ackedPut
	for _, a := range acked {
		if i, ok := idx[a.key]; ok {
			out[i] = a
			continue
		}
		idx[a.key] = len(out)
		out = append(out, a)
	}
	return out
}
