package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/harness"
)

// backupLogName is lumberjack's backup naming, which etcd's rotated logs
// (and so cairn's) follow: <name>-<UTC timestamp><ext>.
var backupLogName = regexp.MustCompile(`^cairn-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log$`)

// TestProcessLogRotation runs cairn with --enable-log-rotation and a 1 MB
// limit, logs more than that, and checks that the file was rotated to a
// backup and that the new file still receives lines. stderr is kept among
// the outputs because the harness watches it for the ready line; the file
// is the only output that rotates.
func TestProcessLogRotation(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "cairn.log")
	m := startMember(t, memberOpts{args: []string{
		"--log-outputs=stderr," + logFile,
		"--enable-log-rotation",
		`--log-rotation-config-json={"maxsize":1}`,
	}})
	cli := m.client(t)
	// Every role created logs "created a role" with its name; 100 names of
	// 16 KiB (bbolt takes keys up to 32 KiB) make well over 1 MiB of log.
	pad := strings.Repeat("r", 16*1024)
	for i := range 100 {
		if _, err := cli.RoleAdd(ctx(t), fmt.Sprintf("%03d%s", i, pad)); err != nil {
			t.Fatalf("role add %d: %v", i, err)
		}
	}
	backups := logBackups(t, filepath.Dir(logFile))
	if len(backups) == 0 {
		t.Fatalf("no backup of %s after logging more than 1 MiB", logFile)
	}
	marker := "after-rotation-marker"
	if _, err := cli.RoleAdd(ctx(t), marker); err != nil {
		t.Fatal(err)
	}
	waitForLogLine(t, logFile, marker)
	if info, err := os.Stat(logFile); err != nil || info.Size() > 1<<20 {
		t.Errorf("current log: %v, size over the 1 MiB limit: %v", err, info)
	}
	for _, b := range backups {
		if info, err := os.Stat(filepath.Join(filepath.Dir(logFile), b)); err != nil || info.Size() > 1<<20 {
			t.Errorf("backup %s: %v, size over the 1 MiB limit: %v", b, err, info)
		}
	}
}

// logBackups lists the rotated backups in dir; any other file but the
// log itself fails the test.
func logBackups(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	must(t, err)
	var out []string
	for _, e := range entries {
		switch {
		case e.Name() == "cairn.log":
		case backupLogName.MatchString(e.Name()):
			out = append(out, e.Name())
		default:
			t.Fatalf("unexpected file %s next to the log", e.Name())
		}
	}
	return out
}

// waitForLogLine waits (bounded, for a hang) until path holds a line
// containing needle.
func waitForLogLine(t *testing.T, path, needle string) {
	t.Helper()
	if !harness.Poll(requestTimeout, 50*time.Millisecond, func() bool {
		data, err := os.ReadFile(path)
		must(t, err)
		return strings.Contains(string(data), needle)
	}) {
		t.Fatalf("%s never received a line with %q", path, needle)
	}
}
