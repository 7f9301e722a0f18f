package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

// TestDiscoveryV3 bootstraps a cluster through v3 discovery: three members
// that share only --discovery-token and --discovery-endpoints find each
// other through a one-member discovery cluster; a fourth member with the
// same token fails with "discovery: cluster is full" and exits non-zero.
func TestDiscoveryV3(t *testing.T) {
	disc := startMember(t, memberOpts{name: "discovery"})
	dcli := disc.client(t)
	token := "e2e-discovery-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := dcli.Put(ctx(t), "/_etcd/registry/"+token+"/_config/size", "3"); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	newMember := func(i int) *member { return discoveryMember(t, dir, i, token, disc.clientURL) }

	members := make([]*member, 3)
	for i := range members {
		members[i] = newMember(i)
	}
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, m := range members {
			if m.running() {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := m.stop(); err != nil {
						t.Errorf("stopping member %s: %v", m.name, err)
					}
				}()
			}
		}
		wg.Wait()
	})
	ready := make([]<-chan struct{}, len(members))
	for i, m := range members {
		ready[i] = m.launch()
	}
	for i, m := range members {
		m.waitReady(ready[i])
	}

	for _, m := range members {
		resp, err := m.client(t).MemberList(ctx(t))
		must(t, err)
		if len(resp.Members) != 3 {
			t.Fatalf("member %s: member list has %d members, want 3: %v", m.name, len(resp.Members), resp.Members)
		}
		names := map[string]bool{}
		for _, mm := range resp.Members {
			names[mm.Name] = true
		}
		for _, want := range []string{"m0", "m1", "m2"} {
			if !names[want] {
				t.Fatalf("member %s: %s missing from member list %v", m.name, want, resp.Members)
			}
		}
	}
	cli := members[0].client(t)
	mustPut(t, cli, "k", "v")
	resp, err := members[2].client(t).Get(ctx(t), "k")
	must(t, err)
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("get k from m2: %v", resp.Kvs)
	}

	// Every member registered itself under the token.
	regs, err := dcli.Get(ctx(t), "/_etcd/registry/"+token+"/members/", clientv3.WithPrefix())
	must(t, err)
	if len(regs.Kvs) != 3 {
		t.Fatalf("registrations = %s, want 3", kvPairs(regs.Kvs))
	}

	// A fourth member with the same token is refused and exits non-zero.
	extra := newMember(3)
	wantRefused(t, extra, "discovery: cluster is full")
	regs, err = dcli.Get(ctx(t), "/_etcd/registry/"+token+"/members/", clientv3.WithPrefix())
	must(t, err)
	if len(regs.Kvs) != 3 {
		t.Fatalf("after the refused member: registrations = %s, want 3", kvPairs(regs.Kvs))
	}
}

// discoveryMember is member i of a cluster bootstrapped through the
// discovery cluster at discURL under token (not started; extra flags are
// appended).
func discoveryMember(t *testing.T, dir string, i int, token, discURL string, extra ...string) *member {
	m := &member{
		t:         t,
		name:      fmt.Sprintf("m%d", i),
		dataDir:   filepath.Join(dir, fmt.Sprintf("m%d.etcd", i)),
		clientURL: harness.FreeURL(t),
		peerURL:   harness.FreeURL(t),
		logPath:   filepath.Join(dir, fmt.Sprintf("m%d.log", i)),
	}
	if os.Getenv(referenceEnv) == "etcd" {
		m.bin = etcdBinary(t)
	}
	m.args = append([]string{
		"--name", m.name,
		"--data-dir", m.dataDir,
		"--listen-client-urls", m.clientURL,
		"--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL,
		"--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster-token", token,
		"--discovery-token", token,
		"--discovery-endpoints", discURL,
		"--heartbeat-interval", "50",
		"--election-timeout", "500",
	}, extra...)
	t.Cleanup(func() {
		if t.Failed() {
			m.dumpLog()
		}
		if m.running() {
			m.kill()
		}
	})
	return m
}

// TestDiscoveryV3WithAuth bootstraps through a discovery cluster that has
// auth enabled: a member with --discovery-user/--discovery-password of a
// user allowed on the registry joins; one with a wrong password fails.
func TestDiscoveryV3WithAuth(t *testing.T) {
	disc := startMember(t, memberOpts{name: "discovery"})
	dcli := disc.client(t)
	token := "e2e-discovery-auth-" + fmt.Sprint(time.Now().UnixNano())
	registry := "/_etcd/registry/"
	steps := []func() error{
		func() error { _, err := dcli.Put(ctx(t), registry+token+"/_config/size", "1"); return err },
		func() error { _, err := dcli.UserAdd(ctx(t), "root", "rootpw"); return err },
		func() error { _, err := dcli.RoleAdd(ctx(t), "root"); return err },
		func() error { _, err := dcli.UserGrantRole(ctx(t), "root", "root"); return err },
		func() error { _, err := dcli.UserAdd(ctx(t), "disc", "discpw"); return err },
		func() error { _, err := dcli.RoleAdd(ctx(t), "registry"); return err },
		func() error {
			_, err := dcli.RoleGrantPermission(ctx(t), "registry", registry, clientv3.GetPrefixRangeEnd(registry), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := dcli.UserGrantRole(ctx(t), "disc", "registry"); return err },
		func() error { _, err := dcli.AuthEnable(ctx(t)); return err },
	}
	for _, step := range steps {
		must(t, step())
	}

	dir := t.TempDir()
	m := discoveryMember(t, dir, 0, token, disc.clientURL, "--discovery-user", "disc", "--discovery-password", "discpw")
	m.waitReady(m.launch())
	resp, err := m.client(t).MemberList(ctx(t))
	must(t, err)
	if len(resp.Members) != 1 || resp.Members[0].Name != "m0" {
		t.Fatalf("member list %v, want m0 alone", resp.Members)
	}
	// etcd ends with the signal's status; cairn must exit cleanly.
	if err := m.stop(); err != nil && os.Getenv(referenceEnv) != "etcd" {
		t.Fatal(err)
	}

	bad := discoveryMember(t, dir, 1, token+"-other", disc.clientURL, "--discovery-user", "disc", "--discovery-password", "wrong")
	wantRefused(t, bad, "authentication failed")
}

// wantRefused launches m, which discovery must refuse: it exits by itself
// within startTimeout, with a non-zero status and reason in its log.
func wantRefused(t *testing.T, m *member, reason string) {
	t.Helper()
	m.launch()
	if err := m.waitExit(t, startTimeout, "exit refused by discovery"); err == nil {
		t.Fatalf("member %s refused by discovery exited with status 0, want non-zero", m.name)
	}
	log, err := os.ReadFile(m.logPath)
	must(t, err)
	if !strings.Contains(string(log), reason) {
		t.Fatalf("log of member %s lacks %q:\n%s", m.name, reason, log)
	}
}
