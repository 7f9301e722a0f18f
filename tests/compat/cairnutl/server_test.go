package cairnutl

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

func peerURL(t testing.TB) string { return harness.FreeURL(t) }

// member is how one member of a cluster is configured.
type member struct {
	name    string
	peerURL string
	dataDir string
}

// initialCluster renders members as --initial-cluster.
func initialCluster(ms []member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.name + "=" + m.peerURL
	}
	return strings.Join(parts, ",")
}

// server is one running etcd or cairn process.
type server struct {
	kind     string
	endpoint string // client host:port
	proc     *harness.Process
}

// memberArgs are the flags that start m of cluster ms (state "new": a
// restored data dir ignores them apart from name and URLs).
func memberArgs(m member, ms []member, endpoint string) []string {
	return harness.Flags{
		Name: m.name, DataDir: m.dataDir, ClientURL: "http://" + endpoint, PeerURL: m.peerURL,
		InitialCluster: initialCluster(ms), Token: "cairnutl-compat",
	}.Args()
}

// startServer runs bin as member m of ms; it is stopped when t ends.
func startServer(t *testing.T, kind, bin string, m member, ms []member) *server {
	t.Helper()
	s := newServer(t, kind, bin, m, ms)
	if err := s.proc.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

func newServer(t *testing.T, kind, bin string, m member, ms []member) *server {
	s := &server{kind: kind, endpoint: harness.FreeAddr(t)}
	s.proc = &harness.Process{
		Name:     kind,
		Bin:      bin,
		Args:     memberArgs(m, ms, s.endpoint),
		CleanEnv: true,
		LogPath:  filepath.Join(t.TempDir(), kind+"-"+m.name+".log"),
	}
	s.proc.StopAtCleanup(t)
	return s
}

// startCluster starts one process per member, all launched before any is
// waited for (a member of a multi-member cluster is ready only once a
// quorum runs).
func startCluster(t *testing.T, kinds []string, ms []member) []*server {
	t.Helper()
	srvs := make([]*server, len(ms))
	procs := make([]*harness.Process, len(ms))
	for i, m := range ms {
		srvs[i] = newServer(t, kinds[i], binOf(kinds[i]), m, ms)
		procs[i] = srvs[i].proc
	}
	if err := harness.StartAll(procs...); err != nil {
		t.Fatal(err)
	}
	return srvs
}

func binOf(kind string) string {
	if kind == "etcd" {
		return etcdBin
	}
	return cairnBin
}

// stop sends SIGTERM, kills after a bound, and reports an unclean exit.
func (s *server) stop() error {
	if !s.proc.Running() {
		return nil
	}
	return harness.CleanExit(s.proc.Bin, s.proc.Stop())
}

// client connects to s; it is closed when t ends.
func (s *server) client(t *testing.T) *clientv3.Client {
	t.Helper()
	return harness.ClientWith(t, clientv3.Config{Endpoints: []string{s.endpoint}, DialTimeout: 5 * time.Second})
}

func ctx(t *testing.T) context.Context { return harness.Ctx(t, 30*time.Second) }
