package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Member is a server process placed by Flags.
type Member struct {
	*Process
	Flags Flags
}

// NewMember prepares (does not start) bin as the member f describes, with
// defaults for what f leaves empty: name m0, a fresh data dir, free client
// and peer URLs. It runs without the caller's ETCD* variables, logs to a
// file in a temp dir, and is stopped when t ends (its log shown if t
// failed).
func NewMember(t testing.TB, bin string, f Flags) *Member {
	t.Helper()
	m, err := placeMember(bin, f, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m.StopAtCleanup(t)
	return m
}

// placeMember is NewMember without a test: the data dir and the log go
// in dir.
func placeMember(bin string, f Flags, dir string) (*Member, error) {
	if f.Name == "" {
		f.Name = "m0"
	}
	if f.DataDir == "" {
		f.DataDir = filepath.Join(dir, f.Name+".etcd")
	}
	for _, u := range []*string{&f.ClientURL, &f.PeerURL} {
		if *u == "" {
			p, err := ports.next()
			if err != nil {
				return nil, err
			}
			*u = fmt.Sprintf("http://127.0.0.1:%d", p)
		}
	}
	return &Member{Flags: f, Process: &Process{
		Name:     f.Name,
		Bin:      bin,
		Args:     f.Args(),
		CleanEnv: true,
		LogPath:  filepath.Join(dir, f.Name+".log"),
	}}, nil
}

// StartMember is NewMember and Start; it fails t if the member does not
// become ready.
func StartMember(t testing.TB, bin string, f Flags) *Member {
	t.Helper()
	m := NewMember(t, bin, f)
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	return m
}

// Endpoint is the member's client URL.
func (m *Member) Endpoint() string { return m.Flags.ClientURL }

// Client returns a client of the member, closed when t ends.
func (m *Member) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	return Client(t, m.Endpoint())
}

// DialTimeout bounds connecting a Client.
const DialTimeout = 10 * time.Second

// Client returns a client of endpoints that logs nothing, closed when t
// ends.
func Client(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	return ClientWith(t, clientv3.Config{Endpoints: endpoints})
}

// ClientWith is Client with more settings; a zero DialTimeout and a nil
// Logger get the defaults.
func ClientWith(t testing.TB, cfg clientv3.Config) *clientv3.Client {
	t.Helper()
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = DialTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("client of %v: %v", cfg.Endpoints, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Ctx returns a context that ends after d or when t ends.
func Ctx(t testing.TB, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}
