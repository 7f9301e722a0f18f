package e2e

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestMaintenanceStatus(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantQuota int64
	}{
		{"default quota", nil, 2147483648},
		{"configured quota", []string{"--quota-backend-bytes", "104857600"}, 104857600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := startMember(t, memberOpts{args: tt.args})
			cli := m.client(t)
			mustPut(t, cli, "k", "v")
			st, err := cli.Status(ctx(t), m.clientURL)
			must(t, err)
			if st.Version != "3.7.1" {
				t.Errorf("version = %q, want 3.7.1", st.Version)
			}
			if st.Leader == 0 || st.Leader != st.Header.MemberId {
				t.Errorf("leader = %x, member id = %x: a single member must lead", st.Leader, st.Header.MemberId)
			}
			if st.DbSize <= 0 || st.DbSizeInUse <= 0 || st.DbSizeInUse > st.DbSize {
				t.Errorf("db size = %d, in use = %d", st.DbSize, st.DbSizeInUse)
			}
			if st.RaftIndex == 0 || st.RaftAppliedIndex == 0 || st.RaftAppliedIndex > st.RaftIndex {
				t.Errorf("raft index = %d, applied = %d", st.RaftIndex, st.RaftAppliedIndex)
			}
			if st.RaftTerm == 0 || st.RaftTerm != st.Header.RaftTerm {
				t.Errorf("raft term = %d, header term = %d", st.RaftTerm, st.Header.RaftTerm)
			}
			if st.DbSizeQuota != tt.wantQuota {
				t.Errorf("db size quota = %d, want %d", st.DbSizeQuota, tt.wantQuota)
			}
			if st.IsLearner || len(st.Errors) != 0 {
				t.Errorf("learner=%v errors=%v", st.IsLearner, st.Errors)
			}
		})
	}
}

func TestMaintenanceHashKVAcrossRestart(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	for i := range 50 {
		mustPut(t, cli, fmt.Sprintf("h/%02d", i%20), fmt.Sprintf("v%d", i))
	}
	_, err := cli.Delete(ctx(t), "h/1", clientv3.WithPrefix())
	must(t, err)
	mid := currentRev(t, cli)
	for i := range 10 {
		mustPut(t, cli, fmt.Sprintf("h/%02d", i), "late")
	}
	_, err = cli.Compact(ctx(t), mid-5)
	must(t, err)
	rev := currentRev(t, cli)

	hashes := func() (latest, atMid *clientv3.HashKVResponse) {
		t.Helper()
		latest, err := cli.HashKV(ctx(t), m.clientURL, 0)
		must(t, err)
		atMid, err = cli.HashKV(ctx(t), m.clientURL, mid)
		must(t, err)
		return latest, atMid
	}
	l1, m1 := hashes()
	if l1.Hash == 0 || l1.HashRevision != rev || m1.HashRevision != mid || l1.CompactRevision != mid-5 {
		t.Fatalf("hashkv: latest=%v atMid=%v, want hash revisions %d/%d, compact revision %d", l1, m1, rev, mid, mid-5)
	}
	if l1.Hash == m1.Hash {
		t.Errorf("hash at %d equals hash at %d though the data differs", rev, mid)
	}
	l1again, _ := hashes()
	if l1again.Hash != l1.Hash {
		t.Errorf("HashKV not stable: %d then %d", l1.Hash, l1again.Hash)
	}

	must(t, m.stop())
	m.restart()
	cli = m.client(t)
	l2, m2 := hashes()
	if l2.Hash != l1.Hash || m2.Hash != m1.Hash || l2.HashRevision != rev || l2.CompactRevision != l1.CompactRevision {
		t.Errorf("after restart: latest=%v atMid=%v; before: latest=%v atMid=%v", l2, m2, l1, m1)
	}
	_, err = cli.HashKV(ctx(t), m.clientURL, mid-6)
	wantErr(t, err, rpctypes.ErrCompacted)
	_, err = cli.HashKV(ctx(t), m.clientURL, rev+1)
	wantErr(t, err, rpctypes.ErrFutureRev)
}

func TestMaintenanceDefragment(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	val := strings.Repeat("d", 4096)
	for i := range 200 {
		mustPut(t, cli, fmt.Sprintf("d/%03d", i), val)
	}
	_, err := cli.Delete(ctx(t), "d/1", clientv3.WithPrefix())
	must(t, err)
	rev := currentRev(t, cli)
	_, err = cli.Compact(ctx(t), rev, clientv3.WithCompactPhysical())
	must(t, err)
	before, err := cli.HashKV(ctx(t), m.clientURL, 0)
	must(t, err)
	st1, err := cli.Status(ctx(t), m.clientURL)
	must(t, err)

	_, err = cli.Defragment(ctx(t), m.clientURL)
	must(t, err)

	st2, err := cli.Status(ctx(t), m.clientURL)
	must(t, err)
	// Status reports sizes as of the last backend commit, so st1 may not yet
	// show the pages the compaction freed. What defragmentation guarantees
	// is a file without free pages: nearly all of it in use.
	if free := st2.DbSize - st2.DbSizeInUse; free*10 > st2.DbSize {
		t.Errorf("after defragmentation %d of %d bytes are still free (before: size %d, in use %d)",
			free, st2.DbSize, st1.DbSize, st1.DbSizeInUse)
	}
	after, err := cli.HashKV(ctx(t), m.clientURL, 0)
	must(t, err)
	if after.Hash != before.Hash || after.HashRevision != before.HashRevision {
		t.Errorf("hash changed with defragmentation: %v -> %v", before, after)
	}
	g, err := cli.Get(ctx(t), "d/", clientv3.WithPrefix())
	must(t, err)
	if g.Count != 100 || g.Header.Revision != rev {
		t.Errorf("after defrag: count=%d rev=%d, want 100 %d", g.Count, g.Header.Revision, rev)
	}
	for _, kv := range g.Kvs {
		if string(kv.Value) != val {
			t.Fatalf("%s has a damaged value after defrag", kv.Key)
		}
	}
	mustPut(t, cli, "after-defrag", "ok")
	// The defragmented file must also be what a restart opens.
	must(t, m.stop())
	m.restart()
	cli = m.client(t)
	again, err := cli.HashKV(ctx(t), m.clientURL, rev)
	must(t, err)
	if again.Hash != before.Hash {
		t.Errorf("hash at %d after restart = %d, want %d", rev, again.Hash, before.Hash)
	}
}

func TestMaintenanceSnapshot(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	for i := range 100 {
		mustPut(t, cli, fmt.Sprintf("s/%03d", i), strings.Repeat("s", 512))
	}
	rev := currentRev(t, cli)
	resp, err := cli.SnapshotWithVersion(ctx(t))
	must(t, err)
	defer resp.Snapshot.Close()
	data, err := io.ReadAll(resp.Snapshot)
	must(t, err)
	// etcd sends the backend's storage version, a full semver string.
	if resp.Version != "3.7.0" {
		t.Errorf("snapshot version = %q, want %q (the storage version)", resp.Version, "3.7.0")
	}
	if resp.Header != nil && resp.Header.Revision != 0 && resp.Header.Revision < rev {
		t.Errorf("snapshot header = %v, older than revision %d", resp.Header, rev)
	}
	if len(data) < 32+4096 {
		t.Fatalf("snapshot is only %d bytes", len(data))
	}
	body, sum := data[:len(data)-32], data[len(data)-32:]
	if h := sha256.Sum256(body); !bytes.Equal(h[:], sum) {
		t.Errorf("last 32 bytes are not the sha256 of the rest")
	}
	// The body is a bbolt file: whole 4 KiB pages.
	if len(body)%4096 != 0 {
		t.Errorf("snapshot body is %d bytes, not a whole number of 4 KiB pages", len(body))
	}
}

func TestMaintenanceAlarms(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	resp, err := cli.AlarmList(ctx(t))
	must(t, err)
	if len(resp.Alarms) != 0 {
		t.Errorf("fresh member has alarms: %v", resp.Alarms)
	}
	st, err := cli.Status(ctx(t), m.clientURL)
	must(t, err)
	// Disarming an alarm that is not raised is fine and lists nothing.
	resp, err = cli.AlarmDisarm(ctx(t), &clientv3.AlarmMember{MemberID: st.Header.MemberId, Alarm: pb.AlarmType_NOSPACE})
	must(t, err)
	if len(resp.Alarms) != 0 {
		t.Errorf("disarm of an absent alarm returned %v", resp.Alarms)
	}
}

func TestMaintenanceNoSpace(t *testing.T) {
	const quota = 1 << 20
	m := startMember(t, memberOpts{args: []string{"--quota-backend-bytes", fmt.Sprint(quota)}})
	cli := m.client(t)
	val := strings.Repeat("q", 8<<10)
	var putErr error
	var stored []string
	// Bound: far more data than the quota.
	for i := 0; i < 20*quota/len(val); i++ {
		k := fmt.Sprintf("q/%05d", i)
		if _, putErr = cli.Put(ctx(t), k, val); putErr != nil {
			break
		}
		stored = append(stored, k)
	}
	wantErr(t, putErr, rpctypes.ErrNoSpace)
	if len(stored) == 0 {
		t.Fatalf("not a single put fit under a %d byte quota", quota)
	}

	st, err := cli.Status(ctx(t), m.clientURL)
	must(t, err)
	memberID := st.Header.MemberId
	alarms, err := cli.AlarmList(ctx(t))
	must(t, err)
	if len(alarms.Alarms) != 1 || alarms.Alarms[0].Alarm != pb.AlarmType_NOSPACE || alarms.Alarms[0].MemberID != memberID {
		t.Fatalf("alarms = %v, want NOSPACE for member %x", alarms.Alarms, memberID)
	}
	if len(st.Errors) == 0 {
		t.Errorf("status lists no errors while NOSPACE is raised")
	}

	// With the alarm raised: small puts and write txns fail, reads and deletes work.
	_, err = cli.Put(ctx(t), "tiny", "x")
	wantErr(t, err, rpctypes.ErrNoSpace)
	_, err = cli.Txn(ctx(t)).Then(clientv3.OpPut("tiny", "x")).Commit()
	wantErr(t, err, rpctypes.ErrNoSpace)
	_, err = cli.Txn(ctx(t)).Then(clientv3.OpGet("q/00000")).Commit()
	must(t, err)
	// etcd applies a put that passed the pre-proposal quota check even if the
	// backend is over quota when it is applied (and answers NOSPACE), so the
	// put that failed may or may not be stored.
	g, err := cli.Get(ctx(t), "q/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	must(t, err)
	if g.Count != int64(len(stored)) && g.Count != int64(len(stored)+1) {
		t.Errorf("count = %d, want %d acknowledged puts (+1 at most)", g.Count, len(stored))
	}
	for i, k := range stored {
		if i >= len(g.Kvs) || string(g.Kvs[i].Key) != k {
			t.Fatalf("acknowledged key %s missing", k)
		}
	}
	d, err := cli.Delete(ctx(t), "q/", clientv3.WithPrefix())
	must(t, err)
	if d.Deleted != g.Count {
		t.Errorf("deleted = %d, want %d", d.Deleted, g.Count)
	}

	// Free the space, disarm, and writes work again.
	_, err = cli.Compact(ctx(t), d.Header.Revision, clientv3.WithCompactPhysical())
	must(t, err)
	_, err = cli.Defragment(ctx(t), m.clientURL)
	must(t, err)
	_, err = cli.Put(ctx(t), "tiny", "x")
	wantErr(t, err, rpctypes.ErrNoSpace) // still armed
	_, err = cli.AlarmDisarm(ctx(t), &clientv3.AlarmMember{MemberID: memberID, Alarm: pb.AlarmType_NOSPACE})
	must(t, err)
	alarms, err = cli.AlarmList(ctx(t))
	must(t, err)
	if len(alarms.Alarms) != 0 {
		t.Errorf("alarms after disarm = %v", alarms.Alarms)
	}
	_, err = cli.Put(ctx(t), "tiny", "x")
	must(t, err)

	// The alarm is persisted: raise it again and restart.
	for i := 0; ; i++ {
		if _, err = cli.Put(ctx(t), fmt.Sprintf("r/%05d", i), val); err != nil {
			break
		}
		if i > 20*quota/len(val) {
			t.Fatal("quota never hit again")
		}
	}
	wantErr(t, err, rpctypes.ErrNoSpace)
	must(t, m.stop())
	m.restart()
	cli = m.client(t)
	alarms, err = cli.AlarmList(ctx(t))
	must(t, err)
	if len(alarms.Alarms) != 1 || alarms.Alarms[0].Alarm != pb.AlarmType_NOSPACE {
		t.Errorf("alarms after restart = %v, want NOSPACE", alarms.Alarms)
	}
	_, err = cli.Put(ctx(t), "tiny", "y")
	if !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Errorf("put after restart with NOSPACE raised: %s, want %s", describeErr(err), describeErr(rpctypes.ErrNoSpace))
	}
}
