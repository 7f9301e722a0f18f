package harness

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnkv/cairn/pkg/proxy"
)

func TestPortSetNeverRepeats(t *testing.T) {
	offered := []int{4001, 4001, 4002, 4001, 4003}
	s := portSet{seen: map[int]bool{}, listen: func() (int, error) {
		p := offered[0]
		offered = offered[1:]
		return p, nil
	}}
	var got []int
	for range 3 {
		p, err := s.next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	if want := []int{4001, 4002, 4003}; !slices.Equal(got, want) {
		t.Fatalf("ports = %v, want %v", got, want)
	}
}

func TestPortSetGivesUp(t *testing.T) {
	s := portSet{seen: map[int]bool{7: true}, listen: func() (int, error) { return 7, nil }}
	if _, err := s.next(); err == nil {
		t.Fatal("a system offering only a used port: no error")
	}
	boom := errors.New("boom")
	s.listen = func() (int, error) { return 0, boom }
	if _, err := s.next(); !errors.Is(err, boom) {
		t.Fatalf("listen error = %v, want it wrapped", err)
	}
}

func TestFlagsArgs(t *testing.T) {
	tests := []struct {
		name  string
		flags Flags
		want  string
	}{
		{"empty", Flags{}, ""},
		{
			"single member bootstraps itself",
			Flags{Name: "m0", DataDir: "/d", ClientURL: "http://c", PeerURL: "http://p", Token: "tok"},
			"--name m0 --data-dir /d --listen-client-urls http://c --advertise-client-urls http://c " +
				"--listen-peer-urls http://p --initial-advertise-peer-urls http://p --initial-cluster m0=http://p --initial-cluster-token tok",
		},
		{
			"advertised peer differs",
			Flags{Name: "a", PeerURL: "http://p", AdvertisePeerURL: "http://proxy", State: "new"},
			"--name a --listen-peer-urls http://p --initial-advertise-peer-urls http://proxy --initial-cluster a=http://proxy --initial-cluster-state new",
		},
		{
			"given cluster and extra flags last",
			Flags{Name: "b", PeerURL: "http://p", InitialCluster: "a=x,b=y", Extra: []string{"--name", "c"}},
			"--name b --listen-peer-urls http://p --initial-advertise-peer-urls http://p --initial-cluster a=x,b=y --name c",
		},
		{"no name: no cluster of itself", Flags{PeerURL: "http://p"}, "--listen-peer-urls http://p --initial-advertise-peer-urls http://p"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(tt.flags.Args(), " "); got != tt.want {
				t.Errorf("Args() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestInitialCluster(t *testing.T) {
	if got := InitialCluster(Names(2), []string{"http://a", "http://b"}); got != "m0=http://a,m1=http://b" {
		t.Errorf("InitialCluster = %q", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("mismatched names and URLs: no panic")
		}
	}()
	InitialCluster(Names(2), nil)
}

func TestLineWatcher(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		found  bool
	}{
		{"whole line", []string{"a\n", "ready to serve\n"}, true},
		{"split across writes", []string{"x read", "y to se", "rve\n"}, true},
		{"split after other lines", []string{"one\ntwo rea", "dy to serve"}, true},
		{"never", []string{"ready to\n", "serve\n"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := newLineWatcher(&out, "ready to serve")
			for _, s := range tt.writes {
				if _, err := w.Write([]byte(s)); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-w.found:
				if !tt.found {
					t.Error("found, want not")
				}
			default:
				if tt.found {
					t.Error("not found")
				}
			}
			if out.String() != strings.Join(tt.writes, "") {
				t.Errorf("copied %q", out.String())
			}
		})
	}
}

func TestSinceLastStart(t *testing.T) {
	log := "=== start a\nold\n=== start b\nnew\n"
	if got := sinceLastStart(log); got != "=== start b\nnew\n" {
		t.Errorf("sinceLastStart = %q", got)
	}
	if got := sinceLastStart("no marker"); got != "no marker" {
		t.Errorf("without a marker = %q", got)
	}
}

func TestLastLines(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb", 5, "a\nb"},
		{"", 3, ""},
	}
	for _, tt := range tests {
		if got := lastLines(tt.in, tt.n); got != tt.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestCleanExit(t *testing.T) {
	termed := exec.Command("sh", "-c", "kill -TERM $$").Run()
	failed := exec.Command("sh", "-c", "exit 3").Run()
	tests := []struct {
		bin   string
		err   error
		clean bool
	}{
		{"/x/etcd", nil, true},
		{"/x/etcd", termed, true},
		{"/x/cairn", termed, false},
		{"/x/etcd", failed, false},
		{"/x/cairn", nil, true},
	}
	for _, tt := range tests {
		if got := CleanExit(tt.bin, tt.err) == nil; got != tt.clean {
			t.Errorf("CleanExit(%s, %v) clean = %v, want %v", tt.bin, tt.err, got, tt.clean)
		}
	}
}

// fakeServer is a Process running a shell that runs setup, logs ReadyLine,
// then runs script. Its long waits exec, so that no child outlives a kill
// holding the output pipe.
func fakeServer(t *testing.T, setup, script string) *Process {
	return &Process{
		Name:    "fake",
		Bin:     "/bin/sh",
		Args:    []string{"-c", setup + "; echo starting; echo '" + ReadyLine + "'; " + script},
		LogPath: filepath.Join(t.TempDir(), "fake.log"),
	}
}

func TestProcessLifecycle(t *testing.T) {
	p := fakeServer(t, "trap 'echo bye; exit 0' TERM", "echo serving; while :; do sleep 0.05; done")
	if p.Running() {
		t.Fatal("running before start")
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitLog("serving", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if !p.Running() {
		t.Fatal("not running after start")
	}
	if _, err := p.Launch(); err == nil {
		t.Fatal("second launch while running: no error")
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop = %v, want a clean exit", err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	p.Kill()
	if p.Running() {
		t.Fatal("running after Kill")
	}
	log, err := p.Log()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log, startMarker); n != 2 || !strings.Contains(log, "\nbye\n") {
		t.Errorf("log over two starts (%d markers):\n%s", n, log)
	}
	since, _ := p.LogSince()
	if strings.Contains(since, "\nbye\n") || !strings.Contains(since, "exited: signal: killed") {
		t.Errorf("log since the second start:\n%s", since)
	}
}

func TestProcessExitsBeforeReady(t *testing.T) {
	p := &Process{Name: "quitter", Bin: "/bin/sh", Args: []string{"-c", "exit 2"}, LogPath: filepath.Join(t.TempDir(), "q.log")}
	err := p.Start()
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Fatalf("Start = %v", err)
	}
	if err := p.WaitLog("anything", time.Second); err == nil {
		t.Fatal("WaitLog on an exited process: no error")
	}
}

func TestProcessNotReadyInTime(t *testing.T) {
	p := &Process{Name: "slow", Bin: "/bin/sh", Args: []string{"-c", "exec sleep 30"},
		LogPath: filepath.Join(t.TempDir(), "s.log"), ReadyTimeout: 50 * time.Millisecond}
	t.Cleanup(p.Kill)
	if err := p.Start(); err == nil || !strings.Contains(err.Error(), "not ready after") {
		t.Fatalf("Start = %v", err)
	}
}

func TestTerminateKillsAfterBound(t *testing.T) {
	p := fakeServer(t, "trap '' TERM", "while :; do sleep 0.05; done")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	err := p.Terminate(syscall.SIGTERM, 200*time.Millisecond)
	if !errors.Is(err, ErrNotStopped) || p.Running() {
		t.Fatalf("Terminate of a process ignoring SIGTERM = %v (running %v)", err, p.Running())
	}
}

func TestStartAll(t *testing.T) {
	a, b := fakeServer(t, ":", "exec sleep 30"), fakeServer(t, ":", "exec sleep 30")
	t.Cleanup(a.Kill)
	t.Cleanup(b.Kill)
	if err := StartAll(a, b); err != nil {
		t.Fatal(err)
	}
	if !a.Running() || !b.Running() {
		t.Fatal("not both running")
	}
}

func TestStartAllFailsAtTheFirstExit(t *testing.T) {
	waiter := fakeServer(t, "exec sleep 30", "")
	waiter.ReadyTimeout = time.Minute
	quitter := &Process{Name: "quitter", Bin: "/bin/sh", Args: []string{"-c", "exit 2"}, LogPath: filepath.Join(t.TempDir(), "q.log")}
	t.Cleanup(waiter.Kill)
	began := time.Now()
	err := StartAll(waiter, quitter)
	if err == nil || !strings.Contains(err.Error(), "quitter exited before it was ready") {
		t.Fatalf("StartAll = %v", err)
	}
	if d := time.Since(began); d > 20*time.Second {
		t.Errorf("StartAll waited %v for a member that will never be ready", d)
	}
}

func TestLostPortRace(t *testing.T) {
	tests := []struct {
		name, script string
		lost         bool
	}{
		{"bind failed", "echo 'listen tcp 127.0.0.1:1: bind: address already in use' >&2; exit 1", true},
		{"another failure", "echo 'bad flag' >&2; exit 1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Process{Name: "p", Bin: "/bin/sh", Args: []string{"-c", tt.script}, LogPath: filepath.Join(t.TempDir(), "p.log")}
			if err := p.Start(); err == nil {
				t.Fatal("started")
			}
			if got := p.LostPortRace(); got != tt.lost {
				t.Errorf("LostPortRace = %v, want %v", got, tt.lost)
			}
		})
	}
	running := fakeServer(t, "echo 'address already in use, retrying'", "exec sleep 30")
	t.Cleanup(running.Kill)
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	if running.LostPortRace() {
		t.Error("a running process lost no race")
	}
}

func TestCleanEnv(t *testing.T) {
	t.Setenv("ETCD_NAME", "x")
	t.Setenv("ETCDCTL_API", "3")
	t.Setenv("CAIRN_KEEP", "1")
	env := strings.Join(CleanEnv(), "\n")
	if strings.Contains(env, "ETCD_NAME") || strings.Contains(env, "ETCDCTL_API") || !strings.Contains(env, "CAIRN_KEEP=1") {
		t.Errorf("CleanEnv kept or dropped the wrong variables")
	}
}

func TestToolRun(t *testing.T) {
	t.Setenv("ETCDCTL_ENDPOINTS", "leaked")
	tests := []struct {
		name    string
		tool    Tool
		script  string
		want    ToolRun
		wantErr bool
	}{
		{"output and status", Tool{}, "echo out; echo err >&2; exit 3", ToolRun{Stdout: "out\n", Stderr: "err\n", Exit: 3}, false},
		{"stdin and env, clean of ETCDCTL_", Tool{Stdin: "in", Env: []string{"X=1"}}, `cat; echo "$X${ETCDCTL_ENDPOINTS}"`, ToolRun{Stdout: "in1\n"}, false},
		{"timeout is an error", Tool{Timeout: 50 * time.Millisecond}, "exec sleep 5", ToolRun{Exit: 0}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.tool.Run("/bin/sh", "-c", tt.script)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("run = %+v, want %+v", got, tt.want)
			}
		})
	}
	if _, err := (Tool{}).Run("/no/such/tool"); err == nil {
		t.Error("a missing tool: no error")
	}
}

func TestPeerCutDrops(t *testing.T) {
	c := &PeerCut{proxies: make([]*proxy.Proxy, 3), ids: []uint64{0xa1, 0xb2, 0xc3}, cut: map[int]bool{}}
	from := func(id string) []byte { return []byte("POST /raft HTTP/1.1\r\nX-Server-From: " + id + "\r\n\r\n") }
	if c.drops(0, from("b2")) {
		t.Fatal("nothing cut: dropped")
	}
	c.cut[1] = true
	tests := []struct {
		proxy int
		chunk []byte
		drop  bool
	}{
		{0, from("b2"), true},         // m1's request through m0's proxy
		{2, from("b2"), true},         // and through m2's
		{1, from("b2"), false},        // its own proxy is blackholed instead
		{0, from("c3"), false},        // another sender
		{0, from("b"), false},         // a prefix of the ID is not the ID
		{0, []byte("payload"), false}, // a body chunk names no sender
	}
	for _, tt := range tests {
		if got := c.drops(tt.proxy, tt.chunk); got != tt.drop {
			t.Errorf("proxy %d, %q: drops = %v, want %v", tt.proxy, tt.chunk, got, tt.drop)
		}
	}
}
