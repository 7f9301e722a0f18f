package etcdctl

import (
	"path/filepath"
	"testing"

	"github.com/cairnkv/cairn/tests/harness"
)

// server is one running etcd or cairn process.
type server struct {
	kind     string // "etcd" or "cairn"
	hostPort string // client address, host:port
	dataDir  string
	scratch  string // a directory for files the test makes, such as snapshots
	proc     *harness.Process
}

// pair is a real etcd and a cairn configured identically.
type pair struct {
	etcd, cairn *server
}

func (p *pair) both() []*server { return []*server{p.etcd, p.cairn} }

// pairOpts configures startPairWith; zero values give startPair's defaults.
type pairOpts struct {
	bins     [2]string // binaries run as "etcd" and "cairn"
	dataDirs [2]string // existing data dirs; fresh ones if empty
	peerURL  string    // the advertised peer URL
	extra    []string  // flags for both
}

// startPair starts a fresh etcd and a fresh cairn. Both advertise the same
// peer URL (etcd's; cairn listens for peers elsewhere, which a single member
// never dials) with the same name and token, so their member and cluster IDs
// match. extra flags are given to both. They are stopped when t ends.
func startPair(t *testing.T, extra ...string) *pair {
	t.Helper()
	return startPairWith(t, pairOpts{extra: extra})
}

func startPairWith(t *testing.T, o pairOpts) *pair {
	t.Helper()
	advertisedPeer := o.peerURL
	if advertisedPeer == "" {
		advertisedPeer = harness.FreeURL(t)
	}
	if o.bins[0] == "" {
		o.bins = [2]string{etcdBin, cairnBin}
	}
	p := &pair{}
	var procs []*harness.Process
	for i, kind := range []string{"etcd", "cairn"} {
		peer := advertisedPeer
		if kind == "cairn" {
			peer = harness.FreeURL(t)
		}
		s := &server{kind: kind, hostPort: harness.FreeAddr(t), dataDir: o.dataDirs[i], scratch: t.TempDir()}
		if s.dataDir == "" {
			s.dataDir = filepath.Join(t.TempDir(), "data")
		}
		s.proc = &harness.Process{
			Name: kind,
			Bin:  o.bins[i],
			Args: harness.Flags{
				Name: "m0", DataDir: s.dataDir, ClientURL: "http://" + s.hostPort,
				PeerURL: peer, AdvertisePeerURL: advertisedPeer,
				Token: "etcdctl-compat", State: "new", Extra: o.extra,
			}.Args(),
			CleanEnv: true,
			LogPath:  filepath.Join(t.TempDir(), kind+".log"),
		}
		s.proc.StopAtCleanup(t)
		procs = append(procs, s.proc)
		if kind == "etcd" {
			p.etcd = s
		} else {
			p.cairn = s
		}
	}
	if err := harness.StartAll(procs...); err != nil {
		t.Fatal(err)
	}
	return p
}
