package embed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/config"
)

// TestNewLoggerRotation logs a little over 1 MB through a logger built
// with --log-rotation-config-json={"maxsize":1} and checks that the file
// rotated and that both files hold whole JSON lines.
func TestNewLoggerRotation(t *testing.T) {
	tests := []struct {
		name    string
		outputs string
	}{
		{"file only", "%s"},
		{"file and stdout", "stdout,%s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			name := filepath.Join(dir, "cairn.log")
			cfg, err := config.Parse([]string{"--log-outputs=" + strings.ReplaceAll(tt.outputs, "%s", name),
				"--enable-log-rotation", `--log-rotation-config-json={"maxsize":1}`}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var stdout string
			if strings.Contains(tt.outputs, "stdout") {
				stdout = captureStdout(t)
			}
			lg, closeLog, err := NewLogger(cfg)
			if err != nil {
				t.Fatal(err)
			}
			pad := strings.Repeat("x", 1000)
			for range 1100 {
				lg.Info("filler", zap.String("pad", pad))
			}
			_ = lg.Sync()
			closeLog()
			if stdout != "" {
				body, err := os.ReadFile(stdout)
				if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(string(body), "\n"); n != 1100 {
					t.Errorf("stdout has %d lines, want all 1100", n)
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 2 {
				t.Fatalf("files = %v, want the log and one backup", entries)
			}
			for _, e := range entries {
				body, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
				for _, l := range lines {
					if !strings.HasPrefix(l, `{"level":"info"`) || !strings.HasSuffix(l, "}") {
						t.Fatalf("%s: torn line %.80q", e.Name(), l)
					}
				}
			}
		})
	}
}

// captureStdout points os.Stdout at a file for the test and returns its
// path: zap opens "stdout" as the os.Stdout of the moment.
func captureStdout(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "stdout")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = f
	t.Cleanup(func() {
		os.Stdout = saved
		f.Close()
	})
	return path
}
