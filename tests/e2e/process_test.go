package e2e

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestHTTPEndpoints(t *testing.T) {
	m := startMember(t, memberOpts{})
	get := func(t *testing.T, path string) (int, map[string]string) {
		t.Helper()
		code, body := httpGet(t, m.clientURL+path)
		var out map[string]string
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("GET %s: body %q is not a JSON object of strings: %v", path, body, err)
		}
		return code, out
	}
	t.Run("version", func(t *testing.T) {
		// A new member's leader decides the cluster version just after the
		// member is ready; until then /version says not_decided, as etcd's.
		code, v := get(t, "/version")
		for deadline := time.Now().Add(10 * time.Second); v["etcdcluster"] == "not_decided" && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			code, v = get(t, "/version")
		}
		if code != http.StatusOK || v["etcdserver"] != "3.7.1" || v["etcdcluster"] != "3.7.0" || v["storage"] != "3.7.0" || len(v) != 3 {
			t.Errorf("GET /version = %d %v, want 200 {etcdserver:3.7.1 etcdcluster:3.7.0 storage:3.7.0}", code, v)
		}
	})
	t.Run("health", func(t *testing.T) {
		code, h := get(t, "/health")
		if code != http.StatusOK || h["health"] != "true" {
			t.Errorf("GET /health = %d %v, want 200 health=true", code, h)
		}
		if _, ok := h["reason"]; !ok {
			t.Errorf("GET /health = %v: no reason field", h)
		}
	})
}

func TestProcessVersionFlag(t *testing.T) {
	out, err := exec.Command(cairnBin, "--version").Output()
	must(t, err)
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	want := []*regexp.Regexp{
		regexp.MustCompile(`^etcd Version: 3\.7\.1$`),
		regexp.MustCompile(`^Git SHA: .+$`), // "Not provided" without build-time ldflags, as in etcd
		regexp.MustCompile(`^Go Version: go\S+$`),
		regexp.MustCompile(`^Go OS/Arch: \w+/\w+$`),
		regexp.MustCompile(`^cairn Version: \S+$`),
	}
	if len(lines) != len(want) {
		t.Fatalf("--version printed %d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d = %q, want match for %s", i+1, lines[i], re)
		}
	}
}

func TestProcessUnknownFlag(t *testing.T) {
	cmd := exec.Command(cairnBin, "--no-such-flag", "--data-dir", t.TempDir())
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("unknown flag: err=%v, want a non-zero exit; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "no-such-flag") || !strings.Contains(string(out), "not defined") {
		t.Errorf("output does not name the unknown flag:\n%s", out)
	}
}

func TestProcessFlagsAndEnv(t *testing.T) {
	tests := []struct {
		name    string
		opts    memberOpts
		wantDir string
		notDir  string
	}{
		{
			name:    "flag given twice takes the last value",
			opts:    memberOpts{omitName: true, omitDataDir: true, clusterName: "second", args: []string{"--name", "first", "--name", "second"}},
			wantDir: "second.etcd", notDir: "first.etcd",
		},
		{
			name:    "ETCD_NAME sets the name",
			opts:    memberOpts{omitName: true, omitDataDir: true, clusterName: "fromenv", env: []string{"ETCD_NAME=fromenv"}},
			wantDir: "fromenv.etcd",
		},
		{
			name:    "ETCD_DATA_DIR sets the data dir",
			opts:    memberOpts{omitDataDir: true, env: []string{"ETCD_DATA_DIR=custom-dir"}},
			wantDir: "custom-dir", notDir: "m0.etcd",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cwd := t.TempDir()
			tt.opts.cwd = cwd
			m := startMember(t, tt.opts)
			cli := m.client(t)
			mustPut(t, cli, "k", "v")
			if _, err := os.Stat(filepath.Join(cwd, tt.wantDir, "member", "snap", "db")); err != nil {
				t.Errorf("data dir %s not used: %v", tt.wantDir, err)
			}
			if tt.notDir != "" {
				if _, err := os.Stat(filepath.Join(cwd, tt.notDir)); err == nil {
					t.Errorf("data dir %s exists, but the effective value should not be it", tt.notDir)
				}
			}
			if err := m.stop(); err != nil {
				t.Errorf("SIGTERM: %v, want a clean exit 0", err)
			}
		})
	}
}

// etcd refuses a flag that is also set by its ETCD_* variable.
func TestProcessFlagShadowsEnv(t *testing.T) {
	cmd := exec.Command(cairnBin, "--name", "fromflag", "--data-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "ETCD_NAME=fromenv")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("flag and env both set: err=%v, want a non-zero exit; output:\n%s", err, out)
	}
	want := `conflicting environment variable "ETCD_NAME" is shadowed by corresponding command-line flag`
	if !strings.Contains(string(out), want) {
		t.Errorf("output does not contain %q:\n%s", want, out)
	}
}

func TestProcessSIGTERMExitsCleanly(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	mustPut(t, cli, "k", "v")
	if err := m.stop(); err != nil {
		t.Fatalf("SIGTERM: %v, want exit status 0", err)
	}
	m.restart()
	cli = m.client(t)
	g, err := cli.Get(ctx(t), "k")
	must(t, err)
	if len(g.Kvs) != 1 || string(g.Kvs[0].Value) != "v" || g.Header.Revision != 2 {
		t.Errorf("after clean restart: kvs=%v revision=%d, want k=v at revision 2", g.Kvs, g.Header.Revision)
	}
}

// TestProcessConsoleLogFormat: --log-format=console writes zap's console
// lines (tab-separated, no JSON objects for the message), as etcd does.
func TestProcessConsoleLogFormat(t *testing.T) {
	m := startMember(t, memberOpts{args: []string{"--log-format=console"}})
	mustPut(t, m.client(t), "k", "v")
	data, err := os.ReadFile(m.logPath)
	must(t, err)
	var ready string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "ready to serve client requests") {
			ready = l
		}
	}
	if f := strings.Split(ready, "\t"); len(f) < 4 || f[1] != "info" || strings.HasPrefix(ready, "{") {
		t.Fatalf("ready line is not a console line: %q", ready)
	}
}

// TestHTTPAccessControl: etcd's default CORS headers on every client HTTP
// answer, OPTIONS answered at once, and --host-whitelist refusing other
// Host headers on plain HTTP with 421 (etcd's defence against DNS
// rebinding). Statuses and headers as etcd v3.7.3 answers the same
// requests (checked with curl against it).
func TestHTTPAccessControl(t *testing.T) {
	get := func(method, url, host string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		must(t, err)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		return resp
	}
	m := startMember(t, memberOpts{})
	for _, method := range []string{http.MethodGet, http.MethodOptions} {
		resp := get(method, m.clientURL+"/version", "")
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
			resp.Header.Get("Access-Control-Allow-Headers") != "accept, content-type, authorization" {
			t.Fatalf("%s /version: %d %v", method, resp.StatusCode, resp.Header)
		}
	}
	w := startMember(t, memberOpts{name: "w", args: []string{"--host-whitelist=good.example", "--cors=http://a.example:8080"}})
	if resp := get(http.MethodGet, w.clientURL+"/version", "evil.example"); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("Host evil.example: %d, want 421", resp.StatusCode)
	}
	resp := get(http.MethodGet, w.clientURL+"/version", "good.example")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("Host good.example without Origin: %d %v", resp.StatusCode, resp.Header)
	}
}
