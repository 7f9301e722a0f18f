package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/cairnkv/cairn/tests/harness"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// crashWait bounds how long an armed crash point may take to be reached
// under write load.
const crashWait = 30 * time.Second

// failpointBinary builds cairn with -tags failpoints once.
func failpointBinary(t *testing.T) string {
	t.Helper()
	return harness.Binary(t, "cairn", "failpoints")
}

// The production binary carries no failpoint machinery: neither the
// environment variable, nor the crash message, nor the names of points.
func TestProductionBinaryHasNoFailpoints(t *testing.T) {
	b, err := os.ReadFile(cairnBin)
	must(t, err)
	for _, s := range []string{"GOFAIL_FAILPOINTS", "failpoint panic", "raftAfterSave", "beforeApplyOneEntryNormal", "defragBeforeRename", "compactBeforeCommitBatch"} {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("the production binary contains %q", s)
		}
	}
}

// armedPoints lists the member's armed failpoints; err is the transport's
// (the member may have crashed already).
func armedPoints(m *member) (int, string, error) {
	resp, err := http.Get(m.clientURL + "/failpoints")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// fpRequest sends an HTTP request to the member's failpoint endpoint.
func fpRequest(t *testing.T, m *member, method, path, body string) (int, string) {
	t.Helper()
	return httpDo(t, method, m.clientURL+"/failpoints"+path, body)
}

// TestFailpointCrashKeepsAcknowledgedWrites crashes a member at a failpoint
// while it takes writes, restarts it and finds every acknowledged write.
func TestFailpointCrashKeepsAcknowledgedWrites(t *testing.T) {
	tests := []struct {
		point string
		// env arms the point at start; otherwise it is armed over HTTP
		// after some writes.
		env string
	}{
		{point: "raftAfterSave"},
		{point: "beforeCommit"},
		{point: "afterApplyOneEntry", env: "afterApplyOneEntry=60*off->panic"},
	}
	for _, tt := range tests {
		t.Run(tt.point, func(t *testing.T) {
			opts := memberOpts{bin: failpointBinary(t)}
			if tt.env != "" {
				opts.env = []string{"GOFAIL_FAILPOINTS=" + tt.env}
			}
			m := startMember(t, opts)
			cli := m.client(t)
			acked := putUntilError(t, cli, "before", 20)
			if tt.env == "" {
				code, body := fpRequest(t, m, http.MethodPut, "/"+tt.point, "panic")
				if code != http.StatusNoContent {
					t.Fatalf("PUT /failpoints/%s = %d %q, want 204", tt.point, code, body)
				}
				// A write still in flight from the first batch may reach the
				// point before this GET does; the member has then crashed
				// at it (waitCrash checks which), which shows it armed too.
				if code, body, err := armedPoints(m); err == nil && (code != http.StatusOK || body != tt.point+"=panic\n") {
					t.Fatalf("GET /failpoints = %d %q", code, body)
				} else if err != nil {
					select {
					case <-m.exited():
					case <-time.After(crashWait):
						t.Fatalf("GET /failpoints failed (%v) but the member runs on", err)
					}
				}
			}
			during := putUntilError(t, cli, "during", -1)
			acked = append(acked, during...)
			waitCrash(t, m, tt.point)
			t.Logf("%d puts acknowledged before %s was armed, %d after", len(acked)-len(during), tt.point, len(during))

			m.env = nil // the restarted member runs with nothing armed
			m.restart()
			cli = m.client(t)
			verifyAcked(t, cli, "before", filterPrefix(acked, "before/"))
			verifyAcked(t, cli, "during", filterPrefix(acked, "during/"))
			if rev := currentRev(t, cli); rev < maxRev(acked) {
				t.Errorf("revision after restart %d < highest acknowledged revision %d", rev, maxRev(acked))
			}
			if code, body := fpRequest(t, m, http.MethodGet, "", ""); code != http.StatusOK || body != "" {
				t.Errorf("after restart GET /failpoints = %d %q, want nothing armed", code, body)
			}
		})
	}
}

// putUntilError puts unique keys under prefix with four writers until n
// are acknowledged (n < 0: until puts fail, bounded by crashWait) and
// returns the acknowledged ones.
func putUntilError(t *testing.T, cli *clientv3.Client, prefix string, n int) []ackedPut {
	t.Helper()
	loadCtx, cancel := context.WithTimeout(context.Background(), crashWait)
	defer cancel()
	var (
		mu    sync.Mutex
		acked []ackedPut
		wg    sync.WaitGroup
		errs  = make([]error, 4)
	)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; loadCtx.Err() == nil; i++ {
				key := fmt.Sprintf("%s/w%d/%06d", prefix, w, i)
				resp, err := cli.Put(loadCtx, key, "v-"+key)
				if err != nil {
					errs[w] = err
					cancel() // the member is gone: stop the others too
					return
				}
				mu.Lock()
				acked = append(acked, ackedPut{key, "v-" + key, resp.Header.Revision})
				if n >= 0 && len(acked) >= n {
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if n >= 0 && len(acked) < n {
		t.Fatalf("only %d of %d puts acknowledged: %v", len(acked), n, errors.Join(errs...))
	}
	return acked
}

// waitCrash waits until the member has exited through the failpoint: exit
// status 2 and the point named in its log.
func waitCrash(t *testing.T, m *member, point string) {
	t.Helper()
	err := m.waitExit(t, crashWait, "crash at "+point)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Errorf("member exited with %v, want exit status 2", err)
	}
	log, err := os.ReadFile(m.logPath)
	must(t, err)
	if want := "failpoint panic: " + point + "\n"; !bytes.Contains(log, []byte(want)) {
		t.Errorf("log does not contain %q", want)
	}
}

// TestFailpointCrashWhileInstallingSnapshot crashes a follower at each
// step of installing a snapshot from the leader (after the .snap file and
// WAL marker, before the db swap) and restarts it: the member finishes
// the install and agrees with the others.
func TestFailpointCrashWhileInstallingSnapshot(t *testing.T) {
	points := []string{"raftAfterSaveSnap", "applyBeforeOpenSnapshot"}
	if testing.Short() {
		points = points[1:]
	}
	for _, point := range points {
		t.Run(point, func(t *testing.T) {
			fb := failpointBinary(t)
			c := startCluster(t, clusterOpts{size: 3, proxies: true, bins: map[int]string{0: fb, 1: fb, 2: fb},
				args: []string{"--snapshot-count", "50", "--snapshot-catchup-entries", "10"}})
			l := c.waitLeader(c.all()...)
			f := c.except(l)[0]
			c.isolate(f)
			var last string
			for i := range 200 {
				last = fmt.Sprintf("v%d", i)
				mustPut(t, c.clients[l], fmt.Sprintf("snap/%03d", i), last)
			}
			if code, body := fpRequest(t, c.members[f], http.MethodPut, "/"+point, "panic"); code != http.StatusNoContent {
				t.Fatalf("arming %s: %d %q", point, code, body)
			}
			c.heal(f)
			waitCrash(t, c.members[f], point)
			c.members[f].restart()
			c.waitValue(t, f, "snap/199", last)
			c.assertConsistent(t, c.all()...)
		})
	}
}
