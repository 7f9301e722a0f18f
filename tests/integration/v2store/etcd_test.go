// Package v2store_test compares the v2 store snapshot cairn writes with the
// one etcd v3.7.3 writes; it runs etcd, so it lives in the tests module.
package v2store_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/membership/v2store"
	"github.com/cairnkv/cairn/server/snap"
	"github.com/cairnkv/cairn/tests/compat/etcdtools"
	"github.com/cairnkv/cairn/tests/harness"
)

// TestAgainstRealEtcd runs etcd v3.7.3 with --snapshot-count 5, changes its
// membership with learners (a second voter would cost a one-member cluster
// its quorum) and, after each step, compares the newest .snap payload with
// Save byte for byte.
func TestAgainstRealEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real etcd")
	}
	bin, err := etcdtools.Path("etcd")
	if err != nil {
		t.Skipf("etcd v3.7.3 is not available: %v", err)
	}
	e := startEtcd(t, bin, "default",
		"--initial-advertise-peer-urls", "http://localhost:2380",
		"--initial-cluster", "default=http://localhost:2380",
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
		"--advertise-client-urls", "http://localhost:2379",
	)
	e.waitReady(t)

	model := v2store.New()
	defaultMember(model)
	model.SetClusterVersion("3.7.0")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var learners []uint64
	steps := []struct {
		name string
		do   func(t *testing.T)
	}{
		{"fresh", func(t *testing.T) {}},
		{"add learner", func(t *testing.T) {
			learners = append(learners, e.addLearner(ctx, t, model, "http://127.0.0.1:23999"))
		}},
		{"add second learner", func(t *testing.T) {
			learners = append(learners, e.addLearner(ctx, t, model, "http://127.0.0.1:23996"))
		}},
		{"update learner", func(t *testing.T) {
			urls := []string{"http://127.0.0.1:23998", "http://127.0.0.1:23997"}
			if _, err := e.cli.MemberUpdate(ctx, learners[0], urls); err != nil {
				t.Fatal(err)
			}
			model.UpdateRaftAttributes(learners[0], urls, true)
		}},
		{"remove learners", func(t *testing.T) {
			for _, id := range learners {
				if _, err := e.cli.MemberRemove(ctx, id); err != nil {
					t.Fatal(err)
				}
				model.RemoveMember(id)
			}
		}},
		{"add learner after removals", func(t *testing.T) {
			e.addLearner(ctx, t, model, "http://127.0.0.1:23995")
		}},
	}
	for _, st := range steps {
		ok := t.Run(st.name, func(t *testing.T) {
			st.do(t)
			got := e.snapshotAfterNow(ctx, t)
			if !matchesSomeOrder(t, model, got) {
				want, _ := model.Save()
				t.Fatalf("etcd's payload matches no member order of the model:\netcd %s\nours %s", got, want)
			}
			l, err := v2store.Load(got)
			if err != nil {
				t.Fatal(err)
			}
			again, err := l.Save()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, got) {
				t.Fatalf("Load+Save differs from etcd:\n got %s\nwant %s", again, got)
			}
		})
		if !ok {
			return // later steps build on this one
		}
	}
}

// matchesSomeOrder reports whether some order of the model's members and
// removed members (etcd walks maps) saves to exactly want.
func matchesSomeOrder(t *testing.T, model *v2store.Store, want []byte) bool {
	t.Helper()
	ms, rs := model.Members(), model.Removed()
	for _, mo := range permutations(len(ms)) {
		for _, ro := range permutations(len(rs)) {
			s := v2store.New()
			for _, i := range mo {
				s.AddMember(ms[i].ID, ms[i].PeerURLs, ms[i].IsLearner)
				s.SetMemberAttributes(ms[i].ID, ms[i].Name, ms[i].ClientURLs)
			}
			for _, i := range ro {
				s.RemoveMember(rs[i])
			}
			s.SetClusterVersion(model.ClusterVersion())
			got, err := s.Save()
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(got, want) {
				return true
			}
		}
	}
	return false
}

func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{nil}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

type etcdProc struct {
	dir       string // member/snap
	cli       *clientv3.Client
	clientURL string
	n         int // keys written so far
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd starts etcd in a temp dir with its client API on a free
// port (advertised as is unless flags say otherwise) and the given cluster
// flags; it does not wait for it to be ready.
func startEtcd(t *testing.T, bin, name string, flags ...string) *etcdProc {
	t.Helper()
	dir := t.TempDir()
	client := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{
		"--data-dir", filepath.Join(dir, "data"),
		"--name", name,
		"--snapshot-count", "5",
		"--max-learners", "3",
		"--listen-client-urls", "http://" + client,
	}, flags...)
	if !slices.Contains(flags, "--advertise-client-urls") {
		args = append(args, "--advertise-client-urls", "http://"+client)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("etcd %s log:\n%s", name, b)
			}
		}
	})
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return &etcdProc{dir: filepath.Join(dir, "data", "member", "snap"), cli: cli, clientURL: "http://" + client}
}

// waitFor retries f for up to 30s.
func waitFor(t *testing.T, what string, f func(ctx context.Context) error) {
	t.Helper()
	var err error
	if !harness.Poll(30*time.Second, 100*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = f(ctx)
		return err == nil
	}) {
		t.Fatalf("%s: %v", what, err)
	}
}

func (e *etcdProc) waitReady(t *testing.T) {
	t.Helper()
	waitFor(t, "etcd did not start", func(ctx context.Context) error {
		_, err := e.cli.Put(ctx, "ready", "")
		return err
	})
}

func (e *etcdProc) addLearner(ctx context.Context, t *testing.T, model *v2store.Store, peerURL string) uint64 {
	t.Helper()
	resp, err := e.cli.MemberAddAsLearner(ctx, []string{peerURL})
	if err != nil {
		t.Fatal(err)
	}
	model.AddMember(resp.Member.ID, []string{peerURL}, true)
	return resp.Member.ID
}

// snapshotAfterNow writes keys until etcd has saved a snapshot taken after
// everything applied so far, and returns its payload.
func (e *etcdProc) snapshotAfterNow(ctx context.Context, t *testing.T) []byte {
	t.Helper()
	st, err := e.cli.Status(ctx, e.cli.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	applied := st.RaftAppliedIndex
	for i := 0; i < 200; i++ {
		if name, index := e.newestSnap(t); index > applied {
			if s, err := snap.Read(filepath.Join(e.dir, name)); err == nil {
				return s.GetData()
			}
			// Possibly still being written: try again.
		}
		e.n++
		if _, err := e.cli.Put(ctx, fmt.Sprintf("k%d", e.n), "v"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("etcd wrote no new snapshot")
	return nil
}

// newestSnap returns the name and raft index of the newest .snap file.
func (e *etcdProc) newestSnap(t *testing.T) (string, uint64) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(e.dir, "*.snap"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		return "", 0
	}
	sort.Strings(names)
	name := filepath.Base(names[len(names)-1])
	parts := strings.SplitN(strings.TrimSuffix(name, ".snap"), "-", 2)
	index, err := strconv.ParseUint(parts[1], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return name, index
}

// TestAgainstRealEtcdPromote runs two real etcd processes: a learner joins,
// publishes its attributes and is promoted. Every payload (taken by the
// first member, and by the second once it is a voter) must be what Save
// makes of the membership etcd reports.
func TestAgainstRealEtcdPromote(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real etcd")
	}
	bin, err := etcdtools.Path("etcd")
	if err != nil {
		t.Skipf("etcd v3.7.3 is not available: %v", err)
	}
	peerA := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	peerB := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	a := startEtcd(t, bin, "a",
		"--initial-advertise-peer-urls", peerA, "--listen-peer-urls", peerA,
		"--initial-cluster", "a="+peerA,
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a.waitReady(t)

	resp, err := a.cli.MemberAddAsLearner(ctx, []string{peerB})
	if err != nil {
		t.Fatal(err)
	}
	idB := resp.Member.ID
	b := startEtcd(t, bin, "b",
		"--initial-advertise-peer-urls", peerB, "--listen-peer-urls", peerB,
		"--initial-cluster", "a="+peerA+",b="+peerB,
		"--initial-cluster-state", "existing",
	)

	// modelOf builds the model from the membership etcd reports.
	modelOf := func(t *testing.T) *v2store.Store {
		t.Helper()
		ml, err := a.cli.MemberList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s := v2store.New()
		for _, m := range ml.Members {
			s.AddMember(m.ID, m.PeerURLs, m.IsLearner)
			if len(m.ClientURLs) > 0 {
				s.SetMemberAttributes(m.ID, m.Name, m.ClientURLs)
			}
		}
		s.SetClusterVersion("3.7.0")
		return s
	}
	check := func(t *testing.T, e *etcdProc, model *v2store.Store) {
		t.Helper()
		got := e.snapshotAfterNow(ctx, t)
		if !matchesSomeOrder(t, model, got) {
			want, _ := model.Save()
			t.Fatalf("etcd's payload matches no member order of the model:\netcd %s\nours %s", got, want)
		}
	}

	waitFor(t, "learner b did not publish", func(ctx context.Context) error {
		ml, err := a.cli.MemberList(ctx)
		if err != nil {
			return err
		}
		for _, m := range ml.Members {
			if m.ID == idB && len(m.ClientURLs) > 0 {
				return nil
			}
		}
		return fmt.Errorf("no client URLs for %x yet", idB)
	})
	model := modelOf(t)
	if got := model.Members(); len(got) != 2 || !got[1].IsLearner && !got[0].IsLearner {
		t.Fatalf("membership before promotion: %+v", got)
	}
	check(t, a, model)

	waitFor(t, "promote", func(ctx context.Context) error {
		_, err := a.cli.MemberPromote(ctx, idB)
		return err
	})
	model = modelOf(t)
	for _, m := range model.Members() {
		if m.IsLearner {
			t.Fatalf("still a learner after promotion: %+v", m)
		}
	}
	check(t, a, model)
	b.waitReady(t)
	check(t, b, model)
}

// defaultID is the member ID of a fresh `etcd --name default`.
const defaultID = 0x8e9e05c52164694d

// defaultMember is what a fresh `etcd --name default` publishes.
func defaultMember(s *v2store.Store) {
	s.AddMember(defaultID, []string{"http://localhost:2380"}, false)
	s.SetMemberAttributes(defaultID, "default", []string{"http://localhost:2379"})
}
