package e2e

import (
	"fmt"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestWatchPrevKVAtCompactRevisionLikeEtcd pins what a prev_kv watcher
// gets around a compaction, on cairn and on etcd v3.7.3: a watch from
// below the compact revision is canceled with it; resumed from it, the
// event at the compact revision itself comes without prev_kv (its previous
// version is compacted away: the lookup at revision - 1 is below the
// compaction), and every later one has it. The robustness checker relies
// on exactly this (tests/robustness, checkWatch): the soak's round 8
// reported such an event as a violation.
func TestWatchPrevKVAtCompactRevisionLikeEtcd(t *testing.T) {
	const want = "canceled compact=5; PUT a=3@5,PUT b=2@6 prev=1,DELETE a@7 prev=3"
	for name, o := range map[string]memberOpts{"cairn": {}, "etcd": {bin: etcdBinary(t)}} {
		t.Run(name, func(t *testing.T) {
			cli := startMember(t, o).client(t)
			// Revisions 2..5: a=1, a=2, b=1, a=3; compaction at 5; then
			// b=2 at 6 and the delete of a at 7.
			for _, kv := range [][2]string{{"a", "1"}, {"a", "2"}, {"b", "1"}, {"a", "3"}} {
				mustPut(t, cli, kv[0], kv[1])
			}
			if _, err := cli.Compact(ctx(t), 5, clientv3.WithCompactPhysical()); err != nil {
				t.Fatal(err)
			}
			mustPut(t, cli, "b", "2")
			if _, err := cli.Delete(ctx(t), "a"); err != nil {
				t.Fatal(err)
			}
			if got := watchAroundCompaction(t, cli); got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

// watchAroundCompaction watches with prev_kv from revision 4 (compacted),
// then from the compact revision it was canceled with, until revision 7.
func watchAroundCompaction(t *testing.T, cli *clientv3.Client) string {
	t.Helper()
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV()}
	resp := nextResp(t, cli.Watch(watchCtx(t), "", append(opts, clientv3.WithRev(4))...))
	if !resp.Canceled {
		t.Fatalf("watch from the compacted revision 4: %+v, want a cancel", resp)
	}
	out := fmt.Sprintf("canceled compact=%d;", resp.CompactRevision)
	wch := cli.Watch(watchCtx(t), "", append(opts, clientv3.WithRev(resp.CompactRevision))...)
	var evs []string
	for last := int64(0); last < 7; {
		resp := nextResp(t, wch)
		if err := resp.Err(); err != nil {
			t.Fatal(err)
		}
		if n := len(resp.Events); n > 0 {
			evs = append(evs, renderEvents(resp.Events))
			last = resp.Events[n-1].Kv.ModRevision
		}
	}
	return out + " " + strings.Join(evs, ",")
}
