package cairnutl

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// cairnRestore restores member m of ms with cairnutl into a fresh data dir.
func cairnRestore(t *testing.T, file string, m *member, ms []member, extra ...string) {
	t.Helper()
	m.dataDir = filepath.Join(t.TempDir(), "data")
	r := restored{dataDir: m.dataDir, walDir: filepath.Join(m.dataDir, "member", "wal")}
	res := run(t, cairnutlBin, restoreArgs(copyTo(t, file), *m, ms, r, extra)...)
	if res.code != 0 {
		t.Fatalf("cairnutl restore: exit %d\n%s", res.code, res.stderr)
	}
}

// checkServes requires s to hold the source's data at its revision and to
// accept a write after it.
func checkServes(t *testing.T, s *server, want map[string]string, rev int64) {
	t.Helper()
	cli := s.client(t)
	kvs, got, err := readAll(t, cli)
	if err != nil {
		t.Fatalf("%s: %v", s.kind, err)
	}
	if got != rev || !reflect.DeepEqual(kvs, want) {
		t.Fatalf("%s serves revision %d with %d keys; want revision %d with %d keys", s.kind, got, len(kvs), rev, len(want))
	}
	put, err := cli.Put(ctx(t), "after-restore", s.kind)
	if err != nil {
		t.Fatalf("%s: put after restore: %v", s.kind, err)
	}
	if put.Header.Revision != rev+1 {
		t.Fatalf("%s: put after restore at revision %d, want %d", s.kind, put.Header.Revision, rev+1)
	}
}

func TestRestoredMemberServesOnEtcdAndCairn(t *testing.T) {
	s := fixture(t)
	for _, kind := range []string{"etcd", "cairn"} {
		for _, from := range []string{s.snapPath, s.dbPath} {
			t.Run(kind+"/"+filepath.Base(from), func(t *testing.T) {
				ms := members(t, 1)
				cairnRestore(t, from, &ms[0], ms, "--skip-hash-check")
				srv := startServer(t, kind, binOf(kind), ms[0], ms)
				checkServes(t, srv, s.kvs, s.rev)
				checkMembers(t, srv, ms)
			})
		}
	}
}

// checkMembers requires the member list to be exactly ms.
func checkMembers(t *testing.T, s *server, ms []member) {
	t.Helper()
	resp, err := s.client(t).MemberList(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range resp.Members {
		got[m.Name] = fmt.Sprint(m.PeerURLs)
	}
	want := map[string]string{}
	for _, m := range ms {
		want[m.name] = fmt.Sprint([]string{m.peerURL})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s member list %v, want %v", s.kind, got, want)
	}
}

func TestThreeMemberRestoreFormsCluster(t *testing.T) {
	s := fixture(t)
	for _, kinds := range [][]string{{"etcd", "etcd", "etcd"}, {"cairn", "cairn", "cairn"}, {"etcd", "cairn", "etcd"}} {
		t.Run(strings.Join(kinds, "+"), func(t *testing.T) {
			ms := members(t, 3)
			for i := range ms {
				cairnRestore(t, s.snapPath, &ms[i], ms)
			}
			srvs := startCluster(t, kinds, ms)
			checkServes(t, srvs[0], s.kvs, s.rev)
			for _, srv := range srvs[1:] {
				resp, err := srv.client(t).Get(ctx(t), "after-restore")
				if err != nil || len(resp.Kvs) != 1 || resp.Header.Revision != s.rev+1 {
					t.Fatalf("%s: after-restore read %v %v", srv.kind, resp, err)
				}
			}
			checkMembers(t, srvs[2], ms)
		})
	}
}

func TestBumpRevisionAndMarkCompacted(t *testing.T) {
	s := fixture(t)
	const bump = 1000
	for _, kind := range []string{"etcd", "cairn"} {
		t.Run(kind, func(t *testing.T) {
			ms := members(t, 1)
			cairnRestore(t, s.snapPath, &ms[0], ms, "--bump-revision", fmt.Sprint(bump), "--mark-compacted")
			srv := startServer(t, kind, binOf(kind), ms[0], ms)
			checkServes(t, srv, s.kvs, s.rev+bump)
			_, err := srv.client(t).Get(ctx(t), "last", clientv3.WithRev(s.rev))
			if !errors.Is(err, rpctypes.ErrCompacted) {
				t.Fatalf("%s: read at the pre-restore revision: %v, want %v", kind, err, rpctypes.ErrCompacted)
			}
		})
	}
}
