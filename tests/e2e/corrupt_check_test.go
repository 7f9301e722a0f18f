package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// corruptedKey is the key whose value corruptValue changes behind raft's back.
const corruptedKey = "corrupt-me"

// corruptValue rewrites, in a stopped member's bbolt db, the value of the
// newest revision of key: the member's key space then differs from its
// peers' although it applied the same entries.
func corruptValue(t *testing.T, dataDir, key string) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dataDir, "member", "snap", "db"), 0o600, &bolt.Options{Timeout: 5 * time.Second})
	must(t, err)
	defer db.Close()
	must(t, db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		if b == nil {
			return fmt.Errorf("no key bucket")
		}
		var rev []byte
		var newest *mvccpb.KeyValue
		err := b.ForEach(func(k, v []byte) error {
			kv := &mvccpb.KeyValue{}
			if err := proto.Unmarshal(v, kv); err != nil {
				return err
			}
			if string(kv.Key) == key {
				rev, newest = append([]byte(nil), k...), kv
			}
			return nil
		})
		if err != nil || newest == nil {
			return fmt.Errorf("no revision of %q in the key bucket (%v)", key, err)
		}
		newest.Value = []byte("corrupted")
		v, err := proto.Marshal(newest)
		if err != nil {
			return err
		}
		return b.Put(rev, v)
	}))
}

// corruptMember writes some keys, then stops member victim, once it has
// applied them, and corrupts its db. The member is not restarted.
func corruptMember(t *testing.T, c *cluster, victim int) {
	t.Helper()
	for i := range 5 {
		mustPut(t, c.clients[0], fmt.Sprintf("k%d", i), "v")
	}
	mustPut(t, c.clients[0], corruptedKey, "good")
	c.syncRead(t, victim)
	must(t, gracefulExit(c.members[victim].stop()))
	corruptValue(t, c.members[victim].dataDir, corruptedKey)
}

// TestInitialCorruptCheckRefusesToStart: with InitialCorruptCheck, a member
// whose data differs from its peers' at its revision refuses to start with
// etcd's error, before serving anything. In mixed clusters cairn and etcd
// answer each other's /members/hashkv requests.
func TestInitialCorruptCheckRefusesToStart(t *testing.T) {
	const victim = 1
	tests := []struct {
		name string
		etcd int // index of the member that runs etcd, -1 for none
	}{
		{"cairn", -1},
		{"cairn member with an etcd peer", 2},
		{"etcd member with cairn peers", victim},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bins := map[int]string{}
			if tt.etcd >= 0 {
				bins[tt.etcd] = etcdBinary(t)
			}
			c := startCluster(t, clusterOpts{args: []string{"--feature-gates=InitialCorruptCheck=true"}, bins: bins})
			corruptMember(t, c, victim)
			m := c.members[victim]

			runCtx, cancel := context.WithTimeout(context.Background(), startTimeout)
			defer cancel()
			out, err := exec.CommandContext(runCtx, m.binary(), m.args...).CombinedOutput()
			if runCtx.Err() != nil {
				t.Fatalf("corrupted member did not stop within %v:\n%s", startTimeout, out)
			}
			if err == nil || strings.Contains(string(out), readyLine) {
				t.Fatalf("corrupted member started:\n%s", out)
			}
			want := fmt.Sprintf("%x found data inconsistency with peers", c.ids[victim])
			if !strings.Contains(string(out), want) {
				t.Fatalf("output lacks %q:\n%s", want, out)
			}
			// Both peers answered, and both disagree.
			if n := strings.Count(string(out), "found different hash values from remote peer"); n != 2 {
				t.Fatalf("%d peers reported a different hash, want 2:\n%s", n, out)
			}
		})
	}
}

// TestCorruptionAlarm: the leader's checks raise a CORRUPT alarm for a
// member whose key space differs, after which the cluster refuses writes
// with etcd's error. The periodic check compares the current hashes; the
// compaction hash check those computed by a compaction.
func TestCorruptionAlarm(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// afterRestart runs once the corrupted member serves again.
		afterRestart func(t *testing.T, c *cluster)
	}{
		{"periodic check", []string{"--corrupt-check-time=1s"}, func(*testing.T, *cluster) {}},
		{"compaction hash check", []string{"--feature-gates=CompactHashCheck=true", "--compact-hash-check-time=1s"},
			func(t *testing.T, c *cluster) {
				rev := c.syncRead(t, 0)
				_, err := c.clients[0].Compact(ctx(t), rev, clientv3.WithCompactPhysical())
				must(t, err)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startCluster(t, clusterOpts{args: tt.args})
			const victim = 1
			corruptMember(t, c, victim)
			c.members[victim].restart()
			tt.afterRestart(t, c)

			alarm := waitCorruptAlarm(t, c)
			if l := c.waitLeader(c.all()...); l != victim && alarm.MemberID != c.ids[victim] {
				t.Errorf("CORRUPT alarm for %x, want the corrupted member %x", alarm.MemberID, c.ids[victim])
			}
			_, err := c.clients[0].Put(ctx(t), "after", "v")
			wantErr(t, err, rpctypes.ErrCorrupt)
		})
	}
}

// waitCorruptAlarm waits until a CORRUPT alarm is listed and returns it.
func waitCorruptAlarm(t *testing.T, c *cluster) *pb.AlarmMember {
	t.Helper()
	deadline := time.Now().Add(clusterWait)
	for {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := c.clients[0].AlarmList(cctx)
		cancel()
		if err == nil {
			for _, a := range resp.Alarms {
				if a.Alarm == pb.AlarmType_CORRUPT {
					return a
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no CORRUPT alarm within %v (last: %v, %v)", clusterWait, resp, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
