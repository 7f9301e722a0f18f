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

	ref := os.Getenv(referenceEnv) == "etcd"
	dir := t.TempDir()
	newMember := func(i int) *member {
		m := &member{
			t:         t,
			name:      fmt.Sprintf("m%d", i),
			dataDir:   filepath.Join(dir, fmt.Sprintf("m%d.etcd", i)),
			clientURL: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
			peerURL:   fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
			logPath:   filepath.Join(dir, fmt.Sprintf("m%d.log", i)),
		}
		if ref {
			m.bin = etcdBinary(t)
		}
		m.args = []string{
			"--name", m.name,
			"--data-dir", m.dataDir,
			"--listen-client-urls", m.clientURL,
			"--advertise-client-urls", m.clientURL,
			"--listen-peer-urls", m.peerURL,
			"--initial-advertise-peer-urls", m.peerURL,
			"--initial-cluster-token", token,
			"--discovery-token", token,
			"--discovery-endpoints", disc.clientURL,
			"--heartbeat-interval", "50",
			"--election-timeout", "500",
		}
		t.Cleanup(func() {
			if t.Failed() {
				m.dumpLog()
			}
		})
		return m
	}

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
	extra.launch()
	extra.mu.Lock()
	exited := extra.exited
	extra.mu.Unlock()
	select {
	case <-exited:
	case <-time.After(startTimeout):
		extra.kill()
		t.Fatal("fourth member still running with a full discovery cluster")
	}
	if extra.exitError() == nil {
		t.Fatal("fourth member exited with status 0, want non-zero")
	}
	log, err := os.ReadFile(extra.logPath)
	must(t, err)
	if !strings.Contains(string(log), "discovery: cluster is full") {
		t.Fatalf("fourth member's log lacks %q:\n%s", "discovery: cluster is full", log)
	}
	regs, err = dcli.Get(ctx(t), "/_etcd/registry/"+token+"/members/", clientv3.WithPrefix())
	must(t, err)
	if len(regs.Kvs) != 3 {
		t.Fatalf("after the refused member: registrations = %s, want 3", kvPairs(regs.Kvs))
	}
}
