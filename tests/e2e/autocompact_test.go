package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

// autoCompactBound only stops a hang: a 2s periodic retention compacts
// after 2s and then every 2s.
const autoCompactBound = 60 * time.Second

// A member started with periodic auto compaction compacts old revisions by
// itself: a Get at a revision written before eventually fails with etcd's
// compacted error, and the member logs etcd's messages.
func TestAutoCompactionPeriodicProcess(t *testing.T) {
	m := startMember(t, memberOpts{args: []string{"--auto-compaction-mode=periodic", "--auto-compaction-retention=2s"}})
	cli := m.client(t)
	old := mustPut(t, cli, "k", "v1")
	mustPut(t, cli, "k", "v2")
	deadline := time.Now().Add(autoCompactBound)
	for {
		_, err := cli.Get(ctx(t), "k", clientv3.WithRev(old))
		if sameErr(err, rpctypes.ErrCompacted) {
			break
		}
		if err != nil {
			t.Fatalf("Get at revision %d: %v, want success or %v", old, err, rpctypes.ErrCompacted)
		}
		if time.Now().After(deadline) {
			t.Fatalf("revision %d not compacted after %v", old, autoCompactBound)
		}
		time.Sleep(100 * time.Millisecond)
	}
	log, err := os.ReadFile(m.logPath)
	must(t, err)
	for _, msg := range []string{"starting auto periodic compaction", "completed auto periodic compaction"} {
		if !strings.Contains(string(log), msg) {
			t.Errorf("log lacks %q", msg)
		}
	}
}

// The flags implemented with auto compaction are accepted or refused by
// cairn as by etcd v3.7.3, with the same message.
func TestMemberFlagValuesMatchEtcd(t *testing.T) {
	etcd := etcdBinary(t)
	accepted := []struct {
		args    []string
		wantLog string // in both logs, if set
	}{
		{[]string{"--auto-compaction-mode=revision", "--auto-compaction-retention=10"}, ""},
		{[]string{"--auto-compaction-retention=1", "--bootstrap-defrag-threshold-megabytes=1"}, "Skipping defragmentation"},
		{[]string{"--raft-read-timeout=1s", "--raft-write-timeout=10s", "--socket-reuse-port", "--socket-reuse-address"},
			"raft-read-timeout increased to minimum value: 5s"},
	}
	for _, tc := range accepted {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			for _, bin := range []string{etcd, cairnBin} {
				m := startMember(t, memberOpts{bin: bin, args: tc.args})
				if err := gracefulExit(m.stop()); err != nil {
					t.Errorf("%s: stop: %v", filepath.Base(bin), err)
				}
				log, err := os.ReadFile(m.logPath)
				must(t, err)
				if !strings.Contains(string(log), tc.wantLog) {
					t.Errorf("%s: log lacks %q", filepath.Base(bin), tc.wantLog)
				}
			}
		})
	}
	refused := []struct {
		args []string
		want string // in both outputs; quotes differ (etcd logs JSON)
	}{
		{[]string{"--auto-compaction-retention=abc"}, `error parsing CompactionRetention: time: invalid duration`},
		{[]string{"--auto-compaction-retention=-1"}, `error parsing CompactionRetention: time: missing unit in duration`},
		{[]string{"--auto-compaction-mode=hourly"}, `unknown auto-compaction-mode`},
		{[]string{"--bootstrap-defrag-threshold-megabytes=x"}, `for flag -bootstrap-defrag-threshold-megabytes: parse error`},
		{[]string{"--raft-read-timeout=5"}, `for flag -raft-read-timeout: parse error`},
	}
	for _, tc := range refused {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			for _, bin := range []string{etcd, cairnBin} {
				out, err := runToExit(t, bin, tc.args)
				var exit *exec.ExitError
				if !errors.As(err, &exit) {
					t.Errorf("%s %v: err = %v, want a refusal; output:\n%s", filepath.Base(bin), tc.args, err, out)
				}
				if !strings.Contains(out, tc.want) {
					t.Errorf("%s %v: output lacks %q:\n%s", filepath.Base(bin), tc.args, tc.want, out)
				}
			}
		})
	}
}

// runToExit runs bin as a fresh member on free ports and returns its output
// once it exits (the bound only stops a hang).
func runToExit(t *testing.T, bin string, args []string) (string, error) {
	t.Helper()
	client := harness.FreeURL(t)
	peer := harness.FreeURL(t)
	c, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	all := append([]string{"--data-dir", filepath.Join(t.TempDir(), "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "default=" + peer}, args...)
	out, err := exec.CommandContext(c, bin, all...).CombinedOutput()
	if c.Err() != nil {
		t.Fatalf("%s %v did not exit within %v:\n%s", filepath.Base(bin), args, startTimeout, out)
	}
	return string(out), err
}
