package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// defragPoints are the steps of cairn's online defrag, in order (see
// server/storage/backend/defrag.go).
var defragPoints = []string{
	"defragBeforeCopy", "defragDuringCopy", "defragDuringCatchUp", "defragBeforeSwap",
	"defragBeforeRename", "defragAfterRename", "defragAfterSwap",
}

// TestFailpointCrashDuringDefrag crashes a member at every step of an
// online defrag while it takes writes. After the restart every acknowledged
// write is there, no half-written copy is left, and etcd opens the data
// dir and finds the same writes.
func TestFailpointCrashDuringDefrag(t *testing.T) {
	points := defragPoints
	if testing.Short() {
		points = []string{"defragDuringCopy", "defragAfterRename"}
	}
	for _, point := range points {
		t.Run(point, func(t *testing.T) {
			m := startMember(t, memberOpts{bin: failpointBinary(t)})
			cli := m.client(t)
			acked := putUntilError(t, cli, "before", 300)
			if code, body := fpRequest(t, m, http.MethodPut, "/"+point, "panic"); code != http.StatusNoContent {
				t.Fatalf("arming %s: %d %q", point, code, body)
			}
			var during []ackedPut
			var wg sync.WaitGroup
			wg.Go(func() { during = putUntilError(t, cli, "during", -1) })
			time.Sleep(100 * time.Millisecond) // let the writers start
			if _, err := cli.Defragment(ctx(t), m.clientURL); err == nil {
				t.Errorf("Defragment succeeded though %s was armed", point)
			}
			waitCrash(t, m, point)
			wg.Wait()
			acked = append(acked, during...)
			t.Logf("%d puts acknowledged during the defrag", len(during))

			m.restart()
			verifyDefragCrash(t, m, acked)
			m.kill()
			m.bin = etcdBinary(t)
			m.restart()
			verifyDefragCrash(t, m, acked)
		})
	}
}

// TestSIGKILLDuringDefrag kills a member while its defrag is held in the
// copy by a sleep point.
func TestSIGKILLDuringDefrag(t *testing.T) {
	m := startMember(t, memberOpts{bin: failpointBinary(t), env: []string{"GOFAIL_FAILPOINTS=defragDuringCopy=sleep(\"3s\")"}})
	cli := m.client(t)
	acked := putUntilError(t, cli, "before", 300)
	errc := make(chan error, 1)
	go func() { _, err := cli.Defragment(context.Background(), m.clientURL); errc <- err }()
	acked = append(acked, putUntilError(t, cli, "during", 200)...)
	tmp := filepath.Join(m.dataDir, "member", "snap", "db.tmp")
	for deadline := time.Now().Add(crashWait); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(tmp); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the defrag never created its copy")
		}
	}
	m.kill()
	if err := <-errc; err == nil {
		t.Error("Defragment succeeded though the member was killed")
	}
	m.env = nil
	m.restart()
	verifyDefragCrash(t, m, acked)
}

// verifyDefragCrash checks a member restarted after a crash during defrag.
func verifyDefragCrash(t *testing.T, m *member, acked []ackedPut) {
	t.Helper()
	cli := m.client(t)
	verifyAcked(t, cli, "before", filterPrefix(acked, "before/"))
	verifyAcked(t, cli, "during", filterPrefix(acked, "during/"))
	if rev := currentRev(t, cli); rev < maxRev(acked) {
		t.Errorf("%s: revision after restart %d < highest acknowledged revision %d", m.binary(), rev, maxRev(acked))
	}
	entries, err := os.ReadDir(filepath.Join(m.dataDir, "member", "snap"))
	must(t, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "db.tmp") {
			t.Errorf("%s: %s left after the restart", m.binary(), e.Name())
		}
	}
	mustPut(t, cli, "after-restart", "x")
}

// TestDefragClusterUnderWriteLoad defragments every member of a 3-member
// cluster, one after the other, while writers keep putting: no write fails
// and the members end with the same data.
func TestDefragClusterUnderWriteLoad(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	for i := range 2000 {
		mustPut(t, c.clients[i%3], fmt.Sprintf("fill/%05d", i), strings.Repeat("v", 256))
	}
	loadCtx, stop := context.WithCancel(context.Background())
	defer stop()
	var (
		wg            sync.WaitGroup
		okPuts, fails atomic.Int64
		firstErr      atomic.Value
	)
	for w := range 6 {
		cli := c.clients[w%3]
		wg.Go(func() {
			for i := 0; loadCtx.Err() == nil; i++ {
				_, err := cli.Put(loadCtx, fmt.Sprintf("load/w%d/%06d", w, i), "x")
				if err == nil {
					okPuts.Add(1)
					continue
				}
				if loadCtx.Err() != nil {
					return // stopped, not failed
				}
				fails.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	for _, i := range c.all() {
		before := okPuts.Load()
		if _, err := c.clients[i].Defragment(ctx(t), c.members[i].clientURL); err != nil {
			t.Fatalf("defrag of m%d: %v", i, err)
		}
		t.Logf("m%d defragmented; %d puts acknowledged meanwhile", i, okPuts.Load()-before)
	}
	stop()
	wg.Wait()
	if n := fails.Load(); n != 0 {
		t.Errorf("%d puts failed during the defrags (first: %v), want 0", n, firstErr.Load())
	}
	if okPuts.Load() == 0 {
		t.Fatal("no put was acknowledged")
	}
	// A put cancelled when the writers stopped may still be applied: wait
	// until the revision stays put before comparing the members.
	for last, deadline := int64(-1), time.Now().Add(10*time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		rev := c.syncRead(t, 0)
		if rev == last {
			break
		}
		last = rev
	}
	c.assertConsistent(t, c.all()...)
}

// TestNoSpaceRecoversWithAutoCompactionAndReclamation fills a member's quota
// with the history of a few keys until NOSPACE, with neither auto
// compaction nor reclamation. Restarted with periodic auto compaction and
// cairn's automatic reclamation, the member gives the space back by itself:
// `alarm disarm` then sticks and writes work, with no manual defrag.
func TestNoSpaceRecoversWithAutoCompactionAndReclamation(t *testing.T) {
	const quota = 40 << 20
	m := startMember(t, memberOpts{args: []string{
		"--quota-backend-bytes", fmt.Sprint(quota), "--experimental-auto-defrag-free-percent=0",
	}})
	cli := m.client(t)
	val := strings.Repeat("h", 100<<10)
	var putErr error
	for i := 0; putErr == nil; i++ {
		if i > 4*quota/len(val) {
			t.Fatal("the quota was never reached")
		}
		_, putErr = cli.Put(ctx(t), fmt.Sprintf("h/%d", i%10), val)
	}
	wantErr(t, putErr, rpctypes.ErrNoSpace)
	st, err := cli.Status(ctx(t), m.clientURL)
	must(t, err)
	memberID := st.Header.MemberId

	must(t, m.stop())
	m.args = append(m.args, "--auto-compaction-mode=periodic", "--auto-compaction-retention=1s",
		"--experimental-auto-defrag-free-percent=50", "--experimental-auto-defrag-min-free-megabytes=1",
		"--experimental-auto-defrag-interval=1s")
	m.restart()
	cli = m.client(t)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		st, err = cli.Status(ctx(t), m.clientURL)
		must(t, err)
		if st.DbSize < quota/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("db still %d bytes (in use %d) a minute after the restart", st.DbSize, st.DbSizeInUse)
		}
	}
	_, err = cli.AlarmDisarm(ctx(t), &clientv3.AlarmMember{MemberID: memberID, Alarm: pb.AlarmType_NOSPACE})
	must(t, err)
	for i := range 20 {
		_, err = cli.Put(ctx(t), fmt.Sprintf("after/%d", i), val)
		must(t, err)
	}
	alarms, err := cli.AlarmList(ctx(t))
	must(t, err)
	if len(alarms.Alarms) != 0 {
		t.Errorf("alarms after disarm and 20 puts: %v", alarms.Alarms)
	}
	log := logSince(t, m)
	if !strings.Contains(log, "finished automatic defragmentation") {
		t.Error("the log does not show the automatic defragmentation")
	}
	if metrics := scrapeText(t, m.clientURL); !strings.Contains(metrics, "cairn_disk_auto_defrag_reclaimed_bytes_total") {
		t.Error("no cairn_disk_auto_defrag_reclaimed_bytes_total in /metrics")
	}
}

// TestStopGRPCServiceOnDefragDuringOnlineDefrag: with the feature gate, the
// gRPC health service reports NOT_SERVING while a defrag runs (held in its
// copy by a sleep point) and SERVING again once it is done, as in etcd,
// although cairn's defrag goes on serving.
func TestStopGRPCServiceOnDefragDuringOnlineDefrag(t *testing.T) {
	m := startMember(t, memberOpts{bin: failpointBinary(t),
		args: []string{"--feature-gates=StopGRPCServiceOnDefrag=true"},
		env:  []string{`GOFAIL_FAILPOINTS=defragDuringCopy=sleep("2s")`}})
	cli := m.client(t)
	mustPut(t, cli, "k", "v")
	health := healthpb.NewHealthClient(cli.ActiveConnection())
	status := func() healthpb.HealthCheckResponse_ServingStatus {
		resp, err := health.Check(ctx(t), &healthpb.HealthCheckRequest{})
		must(t, err)
		return resp.Status
	}
	if s := status(); s != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("before the defrag: %v", s)
	}
	errc := make(chan error, 1)
	go func() { _, err := cli.Defragment(context.Background(), m.clientURL); errc <- err }()
	sawNotServing := false
	for deadline := time.Now().Add(crashWait); !sawNotServing && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		sawNotServing = status() == healthpb.HealthCheckResponse_NOT_SERVING
	}
	if !sawNotServing {
		t.Error("health never reported NOT_SERVING during the defrag")
	}
	mustPut(t, cli, "during", "the defrag") // KV keeps serving
	must(t, <-errc)
	if s := status(); s != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("after the defrag: %v", s)
	}
}
