//go:build failpoints

package failpoint

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// reset disarms everything and catches crashes for the test.
func reset(t *testing.T) *[]string {
	t.Helper()
	var crashed []string
	old := crash
	crash = func(name string) { crashed = append(crashed, name) }
	disarmAll()
	t.Cleanup(func() { crash = old; disarmAll() })
	return &crashed
}

func disarmAll() {
	mu.Lock()
	points = map[string]*point{}
	armed.Store(0)
	mu.Unlock()
}

func TestParseTerms(t *testing.T) {
	tests := []struct {
		spec    string
		want    []term
		wantErr string
	}{
		{spec: "panic", want: []term{{act: actPanic}}},
		{spec: " off ", want: []term{{act: actOff}}},
		{spec: "print", want: []term{{act: actPrint}}},
		{spec: "sleep(100)", want: []term{{act: actSleep, sleep: 100 * time.Millisecond}}},
		{spec: `sleep("1.5s")`, want: []term{{act: actSleep, sleep: 1500 * time.Millisecond}}},
		{spec: "1*panic", want: []term{{act: actPanic, count: 1, left: 1}}},
		{spec: "3*sleep(10)->panic", want: []term{{act: actSleep, sleep: 10 * time.Millisecond, count: 3, left: 3}, {act: actPanic}}},
		{spec: "2*off -> 1*print", want: []term{{act: actOff, count: 2, left: 2}, {act: actPrint, count: 1, left: 1}}},
		{spec: "", wantErr: "empty terms"},
		{spec: "explode", wantErr: `unknown action "explode"`},
		{spec: "50%panic", wantErr: "probabilities"},
		{spec: "0*panic", wantErr: `bad count "0"`},
		{spec: "x*panic", wantErr: `bad count "x"`},
		{spec: "sleep", wantErr: "sleep needs a duration"},
		{spec: "sleep(abc)", wantErr: "bad sleep argument"},
		{spec: `sleep("-1s")`, wantErr: "negative sleep"},
		{spec: "sleep(100", wantErr: "unbalanced parenthesis"},
		{spec: "panic(1)", wantErr: "panic takes no argument"},
		{spec: `return("x")`, wantErr: "return is not supported"},
		{spec: "panic->", wantErr: "empty term"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := parseTerms(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseTerms(%q) error = %v, want one containing %q", tt.spec, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseTerms(%q): %v", tt.spec, err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("parseTerms(%q) = %+v, want %+v", tt.spec, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("parseTerms(%q)[%d] = %+v, want %+v", tt.spec, i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseEnv(t *testing.T) {
	tests := []struct {
		env     string
		want    map[string]string
		wantErr string
	}{
		{env: "a=panic", want: map[string]string{"a": "panic"}},
		{env: "a=panic;b=1*sleep(100);", want: map[string]string{"a": "panic", "b": "1*sleep(100)"}},
		{env: ` a=sleep("1s") ; b=off`, want: map[string]string{"a": `sleep("1s") `, "b": "off"}},
		{env: "a", wantErr: "not name=terms"},
		{env: "=panic", wantErr: "bad name"},
		{env: "a/b=panic", wantErr: "bad name"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			got, err := parseEnv(tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseEnv(%q) error = %v, want %q", tt.env, err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("parseEnv(%q) = %v, %v; want %v", tt.env, got, err, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("parseEnv(%q)[%q] = %q, want %q", tt.env, k, got[k], v)
				}
			}
		})
	}
}

func TestEnableAllIsAllOrNothing(t *testing.T) {
	reset(t)
	if err := enableAll("a=panic;b=bogus"); err == nil {
		t.Fatal("enableAll with a bad term succeeded")
	}
	if got := Armed(); len(got) != 0 {
		t.Fatalf("armed after a failed enableAll: %v", got)
	}
	if err := enableAll("a=panic;b=1*print"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(Armed(), " "); got != "a=panic b=1*print" {
		t.Fatalf("Armed() = %q", got)
	}
}

func TestCountsAndChains(t *testing.T) {
	crashed := reset(t)
	if err := Enable("fp", "2*off->1*panic->off"); err != nil {
		t.Fatal(err)
	}
	var after []int
	for range 5 {
		Inject("fp")
		after = append(after, len(*crashed))
	}
	if want := []int{0, 0, 1, 1, 1}; !slices.Equal(after, want) {
		t.Errorf("crashes after each pass = %v, want %v", after, want)
	}
	if _, hits, _ := Status("fp"); hits != 1 {
		t.Errorf("hits = %d, want 1 (off does not count)", hits)
	}
	Inject("other") // not armed: nothing happens
	if len(*crashed) != 1 || (*crashed)[0] != "fp" {
		t.Errorf("crashed = %v, want [fp]", *crashed)
	}
	// Re-arming resets the chain and the count.
	if err := Enable("fp", "1*panic"); err != nil {
		t.Fatal(err)
	}
	Inject("fp")
	Inject("fp")
	if _, hits, _ := Status("fp"); len(*crashed) != 2 || hits != 1 {
		t.Errorf("after re-arming: %d crashes, %d hits; want 2 and 1", len(*crashed), hits)
	}
}

func TestSleep(t *testing.T) {
	reset(t)
	var slept []time.Duration
	old := sleep
	sleep = func(d time.Duration) { slept = append(slept, d) }
	t.Cleanup(func() { sleep = old })
	if err := Enable("fp", `1*sleep(100)->1*sleep("2s")->off`); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		Inject("fp")
	}
	if want := []time.Duration{100 * time.Millisecond, 2 * time.Second}; !slices.Equal(slept, want) {
		t.Errorf("slept %v, want %v", slept, want)
	}
}

// The real sleep holds the caller for at least the duration (a lower
// bound, which time.Sleep guarantees).
func TestSleepBlocksCaller(t *testing.T) {
	reset(t)
	if err := Enable("fp", "1*sleep(30)"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	Inject("fp")
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("Inject returned after %v, want at least 30ms", d)
	}
}

func TestHTTP(t *testing.T) {
	crashed := reset(t)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "inner "+r.URL.Path) })
	srv := httptest.NewServer(Mount(inner))
	defer srv.Close()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	steps := []struct {
		method, path, body string
		code               int
		resp               string
	}{
		{"GET", "/failpoints", "", 200, ""},
		{"PUT", "/failpoints/b", "1*panic", 204, ""},
		{"PUT", "/failpoints/a", `sleep("1ms")`, 204, ""},
		{"PUT", "/failpoints/c", "bogus", 400, `failpoint: "bogus": unknown action "bogus"`},
		{"PUT", "/failpoints/x/y", "panic", 400, `failpoint: bad name "x/y"`},
		{"GET", "/failpoints", "", 200, "a=sleep(\"1ms\")\nb=1*panic"},
		{"GET", "/failpoints/", "", 200, "a=sleep(\"1ms\")\nb=1*panic"},
		{"GET", "/failpoints/b", "", 200, "1*panic"},
		{"GET", "/failpoints/b/count", "", 200, "0"},
		{"INJECT", "b", "", 0, ""},
		{"GET", "/failpoints/b/count", "", 200, "1"},
		{"GET", "/failpoints/c", "", 404, "failpoint c is not armed"},
		{"GET", "/failpoints/c/count", "", 404, "failpoint c is not armed"},
		{"POST", "/failpoints/b", "", 405, "Method Not Allowed"},
		{"DELETE", "/failpoints", "", 405, "Method Not Allowed"},
		{"DELETE", "/failpoints/b", "", 204, ""},
		{"DELETE", "/failpoints/b", "", 404, "failpoint b is not armed"},
		{"GET", "/failpoints", "", 200, "a=sleep(\"1ms\")"},
		{"GET", "/version", "", 200, "inner /version"},
		{"GET", "/failpointsx", "", 200, "inner /failpointsx"},
	}
	for _, s := range steps {
		if s.method == "INJECT" {
			Inject(s.path)
			continue
		}
		code, body := do(s.method, s.path, s.body)
		if code != s.code || body != s.resp {
			t.Errorf("%s %s %q = %d %q, want %d %q", s.method, s.path, s.body, code, body, s.code, s.resp)
		}
	}
	if len(*crashed) != 1 {
		t.Errorf("crashes = %v, want one", *crashed)
	}
}

func TestInjectConcurrentWithArming(t *testing.T) {
	reset(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			Inject("fp")
		}
	}()
	for range 100 {
		if err := Enable("fp", "off"); err != nil {
			t.Error(err)
		}
		_ = Disable("fp")
	}
	<-done
}

// crashHelperEnv makes the test binary act as a process that arms a
// failpoint from the environment and passes it.
const crashHelperEnv = "FAILPOINT_TEST_CRASH_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(crashHelperEnv) != "" {
		defer fmt.Println("deferred function ran")
		Inject("crashHere")
		fmt.Println("survived")
		return
	}
	os.Exit(m.Run())
}

// TestCrashFromEnv runs a process armed through GOFAIL_FAILPOINTS: the
// panic action ends it with status 2 and names the point on stderr,
// without running deferred functions.
func TestCrashFromEnv(t *testing.T) {
	tests := []struct {
		env      string
		wantCode int
		wantOut  string
	}{
		{env: "crashHere=panic", wantCode: 2, wantOut: "failpoint panic: crashHere\n"},
		{env: "other=panic;crashHere=1*print", wantCode: 0, wantOut: "failpoint print: crashHere\nsurvived\ndeferred function ran\n"},
		{env: "crashHere=off", wantCode: 0, wantOut: "survived\ndeferred function ran\n"},
		{env: "crashHere=explode", wantCode: 2, wantOut: EnvVar + `: failpoint: "explode": unknown action "explode"` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), crashHelperEnv+"=1", EnvVar+"="+tt.env)
			out, err := cmd.CombinedOutput()
			code := 0
			if exit, ok := err.(*exec.ExitError); ok {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode || string(out) != tt.wantOut {
				t.Errorf("exit %d, output %q; want %d, %q", code, out, tt.wantCode, tt.wantOut)
			}
		})
	}
}

// BenchmarkInject measures the tagged build's cost of a point that is
// not armed while another one is (the common case in a robustness run).
func BenchmarkInject(b *testing.B) {
	disarmAll()
	b.Cleanup(disarmAll)
	if err := Enable("other", "off"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		Inject("raftBeforeSave")
	}
}
