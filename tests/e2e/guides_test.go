package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/harness"
)

// The guides in docs/ are tested by running their shell blocks, exactly as
// written, one after the other in one bash process in a scratch directory,
// with cairn, cairnctl and cairnutl first on PATH. A guide names its ports
// as ${VAR:=default} so that the test can hand it free ones.

// TestGuideTLS runs docs/tls.md.
func TestGuideTLS(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed")
	}
	runGuide(t, "tls.md", "C1", "C2", "C3", "P1", "P2", "P3")
}

// guideTools builds cairnctl and cairnutl next to cairnBin and returns
// their directory.
func guideTools(t *testing.T) string {
	t.Helper()
	harness.Binary(t, "cairnutl")
	return filepath.Dir(harness.Binary(t, "cairnctl"))
}

// shellBlocks returns the ```sh blocks of a markdown file, in order.
func shellBlocks(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, line)
		}
	}
	if len(blocks) == 0 {
		t.Fatalf("%s has no sh blocks", path)
	}
	return blocks
}

// runGuide runs the shell blocks of docs/<name>, giving each port variable
// a free port. Everything the guide starts is killed when the test ends.
func runGuide(t *testing.T, name string, portVars ...string) string {
	t.Helper()
	bin := guideTools(t)
	script := "set -euo pipefail\n" + strings.Join(shellBlocks(t, filepath.Join("..", "..", "docs", name)), "\n")
	dir := t.TempDir()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	for _, v := range portVars {
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", v, harness.FreePort(t)))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			dumpGuideLogs(t, dir)
			t.Fatalf("docs/%s: %v\n%s", name, err, out.String())
		}
	case <-time.After(4 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done // the shell no longer writes to out
		dumpGuideLogs(t, dir)
		t.Fatalf("docs/%s did not finish in 4 minutes:\n%s", name, out.String())
	}
	t.Logf("docs/%s:\n%s", name, out.String())
	return out.String()
}

func dumpGuideLogs(t *testing.T, dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		t.Logf("%s:\n%s", filepath.Base(l), b)
	}
}

// TestGuideOperations runs docs/operations.md.
func TestGuideOperations(t *testing.T) {
	runGuide(t, "operations.md", "C1", "C2", "C3", "C4", "C5", "P1", "P2", "P3", "P4", "P5")
}
