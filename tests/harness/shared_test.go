package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBinary writes an executable shell script that ignores its arguments
// and runs script.
func fakeBinary(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-member")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSharedMemberStoppedAfterTheRun(t *testing.T) {
	serve := "echo '" + ReadyLine + "'; while :; do sleep 0.05; done"
	tests := []struct {
		name     string
		onTerm   string // the fake member's SIGTERM trap
		code     int    // the run's exit code before the shared members stop
		wantCode int
	}{
		{"clean exit keeps a pass", "exit 0", 0, 0},
		{"unclean exit fails the run", "exit 3", 0, 1},
		{"a failed run stays failed", "exit 0", 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := StartShared(fakeBinary(t, "trap '"+tt.onTerm+"' TERM; "+serve), Flags{Name: "s"})
			if err != nil {
				t.Fatal(err)
			}
			if !m.Running() || !strings.HasPrefix(m.Endpoint(), "http://127.0.0.1:") || !strings.Contains(strings.Join(m.Args, " "), "--name s ") {
				t.Fatalf("shared member %+v (running %v)", m.Flags, m.Running())
			}
			dir := filepath.Dir(m.LogPath)
			if got := stopShared(tt.code); got != tt.wantCode {
				t.Errorf("exit code %d, want %d", got, tt.wantCode)
			}
			if m.Running() {
				t.Error("still running after the run")
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("its dir %s is still there (%v)", dir, err)
			}
		})
	}
}

func TestSharedMemberThatDoesNotStart(t *testing.T) {
	m, err := StartShared(fakeBinary(t, "echo 'bad flag' >&2; exit 2"), Flags{})
	if err == nil || !strings.Contains(err.Error(), "bad flag") {
		t.Fatalf("StartShared = %v, %v; want the error with the log's end", m, err)
	}
	if code := stopShared(1); code != 1 {
		t.Errorf("exit code %d", code)
	}
}

func TestSharedMemberRetriedAfterALostPort(t *testing.T) {
	tried := filepath.Join(t.TempDir(), "tried")
	bin := fakeBinary(t, "if [ ! -e "+tried+" ]; then touch "+tried+"; echo 'bind: address already in use' >&2; exit 1; fi; "+
		"trap 'exit 0' TERM; echo '"+ReadyLine+"'; while :; do sleep 0.05; done")
	m, err := StartShared(bin, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Running() {
		t.Fatal("the second start is not running")
	}
	if code := stopShared(0); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
