package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/server/config"
)

// TestSystemdUnitVerifies runs systemd-analyze verify on the unit, with
// ExecStart pointed at a freshly built cairn (verify checks that the
// binary exists). Any complaint about the unit fails the test: verify
// itself exits 0 on unknown keys.
func TestSystemdUnitVerifies(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed (apt-get install systemd)")
	}
	unit := string(must(os.ReadFile("systemd/cairn.service")))
	for _, want := range []string{"Type=notify", "User=cairn", "EnvironmentFile=/etc/cairn/cairn.env", "Restart=on-failure", "ExecStart=/usr/local/bin/cairn\n"} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q", want)
		}
	}
	dir := t.TempDir()
	bin := buildCairn(t)
	unit = strings.ReplaceAll(unit, "/usr/local/bin/cairn", bin)
	path := filepath.Join(dir, "cairn.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
	var complaints []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "cairn.service") {
			complaints = append(complaints, line)
		}
	}
	if err != nil || len(complaints) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, strings.Join(complaints, "\n"))
	}
}

// TestSystemdEnvironmentFile parses the example environment file as
// systemd passes it and checks that cairn accepts it.
func TestSystemdEnvironmentFile(t *testing.T) {
	environ := readEnvFile(t, "systemd/cairn.env")
	cfg, err := config.Parse(nil, environ)
	if err != nil {
		t.Fatalf("cairn refuses %v: %v", environ, err)
	}
	if !strings.HasPrefix(cfg.Dir, "/var/lib/cairn/") {
		t.Errorf("data dir %q is outside the unit's StateDirectory", cfg.Dir)
	}
}

// readEnvFile reads KEY=VALUE lines, skipping comments and blank lines.
func readEnvFile(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var environ []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "ETCD_") || !strings.Contains(line, "=") {
			t.Fatalf("%s: %q is not an ETCD_ variable", path, line)
		}
		environ = append(environ, line)
	}
	return environ
}
