package etcdctl

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/cairnkv/cairn/tests/harness"
)

// The output formats of the endpoint and alarm commands.
var (
	statusFormats = []string{"simple", "json", "fields", "table"}
	healthFormats = []string{"simple", "json", "table", "fields"}
)

func TestMaintenance(t *testing.T) {
	p := startPair(t)
	var steps []step
	add := func(s ...step) { steps = append(steps, s...) }
	for i, kv := range [][2]string{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"a", "4"}, {"d", "5"}, {"b", "6"}, {"e", "7"}} {
		add(step{name: fmt.Sprintf("put %d", i+2), args: []string{"put", kv[0], kv[1]}})
	}
	// Revision 8. The status, hash and alarm views of a store with history.
	add(withFormats(step{args: []string{"endpoint", "status"}, want: "3.7.0, <masked>, <masked>, <masked>, 2.1 GB, true, false"}, statusFormats...)...)
	add(withFormats(step{args: []string{"endpoint", "hashkv"}}, statusFormats...)...)
	add(
		step{args: []string{"endpoint", "status", "-w", "protobuf"}, want: "Error: protobuf not supported as output format", wantExit: 4},
		step{args: []string{"endpoint", "hashkv", "-w", "protobuf"}, want: "Error: protobuf not supported as output format", wantExit: 4},
	)
	add(withFormats(step{args: []string{"endpoint", "hashkv", "--rev=5"}}, "simple", "json")...)
	add(withFormats(step{args: []string{"endpoint", "health"}, want: "<endpoint> is healthy: successfully committed proposal: took <masked>"}, healthFormats...)...)
	add(withFormats(step{args: []string{"alarm", "list"}}, formats...)...)
	add(withFormats(step{args: []string{"alarm", "disarm"}}, formats...)...)
	// Compaction.
	add(
		step{args: []string{"compaction", "4"}, want: "compacted revision 4"},
		step{args: []string{"get", "a", "--rev", "3"}, want: "Error: etcdserver: mvcc: required revision has been compacted", wantExit: 1},
		step{args: []string{"get", "a", "--rev", "3", "-w", "json"}, want: "Error: etcdserver: mvcc: required revision has been compacted", wantExit: 1},
		step{args: []string{"get", "", "--from-key", "--rev", "4"}, want: "a\n1\nb\n2\nc\n3"},
		step{args: []string{"get", "", "--from-key", "--rev", "4", "-w", "fields"}},
		step{args: []string{"compaction", "4"}, want: "Error: etcdserver: mvcc: required revision has been compacted", wantExit: 1},
		step{args: []string{"compaction", "3"}, want: "Error: etcdserver: mvcc: required revision has been compacted", wantExit: 1},
		step{args: []string{"compaction", "100"}, want: "Error: etcdserver: mvcc: required revision is a future revision", wantExit: 1},
		step{args: []string{"compaction", "--physical", "6"}, want: "compacted revision 6"},
		step{args: []string{"txn"}, stdin: txnInput(nil, []string{"get a --rev 5"}, nil),
			want: "Error: etcdserver: mvcc: required revision has been compacted", wantExit: 1},
		step{args: []string{"put", "f", "8"}},
		step{args: []string{"del", "c", "--prev-kv"}, want: "1\nc\n3"},
	)
	add(withFormats(step{args: []string{"endpoint", "hashkv"}}, "simple", "json", "fields", "table")...)
	add(
		step{args: []string{"endpoint", "hashkv", "--rev=7"}},
		step{args: []string{"endpoint", "hashkv", "--rev=5", "-w", "json"}, wantExit: 1},
		step{args: []string{"endpoint", "hashkv", "--rev=100"}, wantExit: 1},
		step{args: []string{"defrag"}, want: "Finished defragmenting etcd member[<endpoint>]. took <masked>"},
		step{args: []string{"get", "", "--from-key", "-w", "json"}},
		step{args: []string{"endpoint", "status", "-w", "json"}},
		step{args: []string{"endpoint", "hashkv", "-w", "json"}},
		step{args: []string{"compaction", "10"}, want: "compacted revision 10"},
		step{args: []string{"get", "", "--from-key", "--rev", "10", "-w", "protobuf"}},
		step{args: []string{"endpoint", "hashkv", "-w", "json"}},
	)
	p.checkAll(t, steps)

	// move-leader needs the member ID, which is the same on both sides.
	st := ctl(t, p.etcd, "", "endpoint", "status", "-w", "json")
	var status []struct {
		Status struct {
			Header struct {
				MemberID uint64 `json:"member_id"`
			} `json:"header"`
		}
	}
	if err := json.Unmarshal([]byte(st.stdout), &status); err != nil || len(status) != 1 {
		t.Fatalf("endpoint status -w json: %v\n%s", err, st.stdout)
	}
	self := strconv.FormatUint(status[0].Status.Header.MemberID, 16)
	p.checkAll(t, []step{
		{name: "move-leader to itself", args: []string{"move-leader", self}},
		{name: "move-leader to an unknown member", args: []string{"move-leader", "1234abcd"}, wantExit: 1},
		{name: "move-leader bad id", args: []string{"move-leader", "xyz"}, wantExit: 128},
	})
}

// TestSnapshot saves a snapshot from each server with etcdctl and checks it
// with etcdutl: same revision, key count and storage version, and a hash
// check that passes on restore.
func TestSnapshot(t *testing.T) {
	p := startPair(t)
	var steps []step
	for i := range 20 {
		steps = append(steps, step{name: fmt.Sprintf("put %d", i), args: []string{"put", fmt.Sprintf("key%02d", i%7), fmt.Sprintf("value-%d", i)}})
	}
	steps = append(steps,
		step{args: []string{"del", "key03"}},
		step{args: []string{"compaction", "12"}},
		step{args: []string{"snapshot", "save", "{dir}/snap.db"}, want: "Snapshot saved at {dir}/snap.db"},
		step{args: []string{"snapshot", "save", "{dir}/nosuchdir/snap.db"}, want: "Error: could not open {dir}/nosuchdir/snap.db.part", wantExit: 5},
	)
	p.checkAll(t, steps)

	type snapStatus struct {
		Hash      uint32 `json:"hash"`
		Revision  int64  `json:"revision"`
		TotalKey  int    `json:"totalKey"`
		TotalSize int64  `json:"totalSize"`
		Version   string `json:"version"`
	}
	var got [2]snapStatus
	for i, s := range p.both() {
		r := run(t, "", etcdutlBin, "snapshot", "status", s.scratch+"/snap.db", "-w", "json")
		if r.exit != 0 {
			t.Fatalf("etcdutl snapshot status of %s's snapshot: exit %d\n%s%s", s.kind, r.exit, r.stdout, r.stderr)
		}
		if err := json.Unmarshal([]byte(r.stdout), &got[i]); err != nil {
			t.Fatalf("etcdutl snapshot status of %s's snapshot: %v\n%s", s.kind, err, r.stdout)
		}
	}
	e, c := got[0], got[1]
	t.Logf("etcdutl snapshot status: etcd %+v, cairn %+v", e, c)
	if e.Revision != 22 {
		t.Errorf("etcd's snapshot is at revision %d, the test expects 22", e.Revision)
	}
	if c.Revision != e.Revision || c.TotalKey != e.TotalKey || c.Version != e.Version {
		t.Errorf("etcdutl snapshot status: etcd revision=%d totalKey=%d version=%q, cairn revision=%d totalKey=%d version=%q",
			e.Revision, e.TotalKey, e.Version, c.Revision, c.TotalKey, c.Version)
	}

	t.Run("bucket layout", func(t *testing.T) {
		e, c := snapshotLayout(t, p.etcd.scratch+"/snap.db"), snapshotLayout(t, p.cairn.scratch+"/snap.db")
		t.Logf("etcd's snapshot layout:\n%s", e)
		if e != c {
			t.Errorf("buckets and keys (outside the key bucket) of the snapshots differ (-etcd +cairn):\n%s", unifiedDiff(e, c))
		}
	})

	// Restore verifies the snapshot's trailing SHA-256. Then a real etcd
	// serves each restored snapshot, and the two must hold the same data.
	peer := harness.FreeURL(t)
	var restored [2]string
	for i, s := range p.both() {
		restored[i] = s.scratch + "/restored"
		r := run(t, "", etcdutlBin, "snapshot", "restore", s.scratch+"/snap.db",
			"--data-dir", restored[i], "--name", "m0", "--initial-cluster", "m0="+peer,
			"--initial-advertise-peer-urls", peer, "--initial-cluster-token", "etcdctl-compat")
		if r.exit != 0 {
			t.Fatalf("etcdutl snapshot restore of %s's snapshot: exit %d\n%s%s", s.kind, r.exit, r.stdout, r.stderr)
		}
	}
	// "etcd" and "cairn" now name where each snapshot came from.
	rp := startPairWith(t, pairOpts{bins: [2]string{etcdBin, etcdBin}, dataDirs: restored, peerURL: peer})
	rp.checkAll(t, []step{
		{name: "restored data", args: []string{"get", "", "--from-key", "-w", "json"}, want: `"revision": 22`},
		{name: "restored history", args: []string{"get", "", "--from-key", "--rev", "15", "-w", "json"}},
		{name: "restored compaction", args: []string{"get", "", "--from-key", "--rev", "11"},
			want: "Error: etcdserver: mvcc: required revision has been compacted", wantExit: 1},
		{name: "restored hash", args: []string{"endpoint", "hashkv", "-w", "json"}},
		{name: "restored status", args: []string{"endpoint", "status"}},
	})
}

// snapshotLayout lists a snapshot's bucket names and, except for the key
// bucket (whose contents the other checks compare), their key names.
// Values are left out: the consistent index, the term and the client URLs
// legitimately differ.
func snapshotLayout(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("opening snapshot %s: %v", path, err)
	}
	defer db.Close()
	var b strings.Builder
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			fmt.Fprintf(&b, "%s\n", name)
			if string(name) == "key" {
				return nil
			}
			return bk.ForEach(func(k, _ []byte) error {
				fmt.Fprintf(&b, "%s/%s\n", name, k)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatalf("reading snapshot %s: %v", path, err)
	}
	return b.String()
}

// TestNoSpaceAlarm fills a small quota so that the server raises the NOSPACE
// alarm, then lists and disarms it.
func TestNoSpaceAlarm(t *testing.T) {
	p := startPair(t, "--quota-backend-bytes=200000")
	big := make([]byte, 300000)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	p.checkAll(t, []step{
		{args: []string{"put", "small", "1"}, want: "OK"},
		{name: "put beyond the quota", args: []string{"put", "big"}, stdin: string(big),
			want: "Error: etcdserver: mvcc: database space exceeded", wantExit: 1},
		{args: []string{"alarm", "list"}, want: "alarm:NOSPACE"},
		{args: []string{"alarm", "list", "-w", "json"}},
		{args: []string{"alarm", "list", "-w", "fields"}},
		{args: []string{"alarm", "list", "-w", "protobuf"}},
		{args: []string{"endpoint", "status"}, want: "memberID:"},
		{args: []string{"endpoint", "status", "-w", "json"}},
		{args: []string{"endpoint", "health"}, wantExit: 1},
		{args: []string{"endpoint", "health", "-w", "json"}, wantExit: 1},
		{name: "put while the alarm is raised", args: []string{"put", "small", "2"},
			want: "Error: etcdserver: mvcc: database space exceeded", wantExit: 1},
		{name: "txn with a write while the alarm is raised", args: []string{"txn"}, stdin: txnInput(nil, []string{"put t 1"}, nil),
			want: "Error: etcdserver: mvcc: database space exceeded", wantExit: 1},
		{name: "read-only txn while the alarm is raised", args: []string{"txn"}, stdin: txnInput(nil, []string{"get small"}, nil), want: "SUCCESS"},
		{name: "get while the alarm is raised", args: []string{"get", "small"}, want: "small\n1"},
		{name: "del while the alarm is raised", args: []string{"del", "nothing"}, want: "0"},
		{args: []string{"alarm", "disarm"}, want: "alarm:NOSPACE"},
		{args: []string{"alarm", "list"}},
		{args: []string{"alarm", "disarm", "-w", "json"}},
		{name: "put after disarm", args: []string{"put", "small", "3"}, want: "OK"},
		{args: []string{"endpoint", "health"}},
	})
}
