package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/pkg/freeport"
	"github.com/cairnkv/cairn/server/config"
	"github.com/cairnkv/cairn/server/discovery"
	"github.com/cairnkv/cairn/server/embed"
)

// readyTimeout only keeps a broken member from hanging the test binary.
const readyTimeout = 20 * time.Second

// memberConfig is a one-member configuration on free loopback ports.
func memberConfig(t *testing.T, name string) *config.Config {
	t.Helper()
	clientURL, peerURL := freeport.URL(t), freeport.URL(t)
	cfg := config.NewConfig()
	cfg.Name = name
	cfg.Dir = t.TempDir()
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(name)
	return cfg
}

func waitReady(t *testing.T, m *embed.Member) {
	t.Helper()
	select {
	case <-m.ReadyNotify():
	case err := <-m.Err():
		t.Fatal(err)
	case <-time.After(readyTimeout):
		t.Fatal("member not ready")
	}
}

// startDiscoveryService starts a one-member cairn cluster in-process and
// returns a client to it and its client URL.
func startDiscoveryService(t *testing.T) (*client.Client, string) {
	t.Helper()
	cfg := memberConfig(t, "discovery")
	m, err := embed.StartMemberWith(cfg, zap.NewNop(), embed.Extensions{Discover: discovery.Bootstrap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	waitReady(t, m)
	ep := cfg.AdvertiseClientUrls[0].String()
	cli, err := client.New(client.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli, ep
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func put(t *testing.T, cli *client.Client, key, val string) {
	t.Helper()
	if _, err := cli.Put(testCtx(t), key, val); err != nil {
		t.Fatal(err)
	}
}

func dcfg(token, ep string) discovery.Config {
	return discovery.Config{Token: token, Endpoints: []string{ep}, DialTimeout: 5 * time.Second,
		RequestTimeout: 5 * time.Second, RetryBase: 10 * time.Millisecond, MaxRetries: 3}
}

func TestKeys(t *testing.T) {
	if got, want := discovery.SizeKey("tok"), "/_etcd/registry/tok/_config/size"; got != want {
		t.Errorf("SizeKey = %q, want %q", got, want)
	}
	if got, want := discovery.MemberKey("tok", 0xabc), "/_etcd/registry/tok/members/abc"; got != want {
		t.Errorf("MemberKey = %q, want %q", got, want)
	}
	if got, want := discovery.ErrFullCluster.Error(), "discovery: cluster is full"; got != want {
		t.Errorf("ErrFullCluster = %q, want %q", got, want)
	}
}

func TestJoinClusterFormsClusterAndRejectsExtra(t *testing.T) {
	cli, ep := startDiscoveryService(t)
	const token = "tok-join"
	put(t, cli, discovery.SizeKey(token), "3")

	type result struct {
		cluster string
		err     error
	}
	results := make([]result, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			self := fmt.Sprintf("m%d=http://127.0.0.1:%d", i, 12380+i)
			c, err := discovery.JoinCluster(testCtx(t), zap.NewNop(), dcfg(token, ep), uint64(100+i), self)
			results[i] = result{c, err}
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("member %d: %v", i, r.err)
		}
		if r.cluster != results[0].cluster {
			t.Fatalf("member %d got %q, member 0 got %q", i, r.cluster, results[0].cluster)
		}
	}
	parts := strings.Split(results[0].cluster, ",")
	sort.Strings(parts)
	want := "m0=http://127.0.0.1:12380,m1=http://127.0.0.1:12381,m2=http://127.0.0.1:12382"
	if got := strings.Join(parts, ","); got != want {
		t.Fatalf("cluster = %q, want %q", got, want)
	}

	// A fourth member fails before registering.
	_, err := discovery.JoinCluster(testCtx(t), zap.NewNop(), dcfg(token, ep), 200, "m3=http://127.0.0.1:12383")
	if !errors.Is(err, discovery.ErrFullCluster) {
		t.Fatalf("fourth member: err = %v, want %v", err, discovery.ErrFullCluster)
	}
	resp, err := cli.Get(testCtx(t), discovery.MemberKey(token, 200))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Fatalf("full cluster: fourth member registered anyway: %v", resp.Kvs)
	}

	// GetCluster reads the same cluster without registering.
	got, err := discovery.GetCluster(testCtx(t), zap.NewNop(), dcfg(token, ep))
	if err != nil || got != results[0].cluster {
		t.Fatalf("GetCluster = %q, %v; want %q", got, err, results[0].cluster)
	}
}

func TestJoinClusterWaitsForPeers(t *testing.T) {
	cli, ep := startDiscoveryService(t)
	const token = "tok-wait"
	put(t, cli, discovery.SizeKey(token), "2")

	done := make(chan error, 1)
	var cluster string
	go func() {
		var err error
		cluster, err = discovery.JoinCluster(testCtx(t), zap.NewNop(), dcfg(token, ep), 1, "a=http://10.0.0.1:2380")
		done <- err
	}()
	// Wait until a registered itself; it must still be waiting.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := cli.Get(testCtx(t), discovery.MemberKey(token, 1))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("member a never registered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("returned before the cluster was complete: %q, %v", cluster, err)
	case <-time.After(200 * time.Millisecond):
	}
	put(t, cli, discovery.MemberKey(token, 2), "b=http://10.0.0.2:2380")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting after the second registration")
	}
	if want := "a=http://10.0.0.1:2380,b=http://10.0.0.2:2380"; cluster != want {
		t.Fatalf("cluster = %q, want %q", cluster, want)
	}
}

func TestFirstRegistrationsWin(t *testing.T) {
	cli, ep := startDiscoveryService(t)
	const token = "tok-race"
	put(t, cli, discovery.SizeKey(token), "2")
	// Three registered concurrently (more than the size): the first two by
	// create revision form the cluster.
	put(t, cli, discovery.MemberKey(token, 0x30), "c=http://10.0.0.3:2380")
	put(t, cli, discovery.MemberKey(token, 0x10), "a=http://10.0.0.1:2380")
	put(t, cli, discovery.MemberKey(token, 0x20), "b=http://10.0.0.2:2380")

	got, err := discovery.JoinCluster(testCtx(t), zap.NewNop(), dcfg(token, ep), 0x10, "a=http://10.0.0.1:2380")
	if err != nil {
		t.Fatal(err)
	}
	if want := "c=http://10.0.0.3:2380,a=http://10.0.0.1:2380"; got != want {
		t.Fatalf("cluster = %q, want %q", got, want)
	}
	_, err = discovery.JoinCluster(testCtx(t), zap.NewNop(), dcfg(token, ep), 0x20, "b=http://10.0.0.2:2380")
	if !errors.Is(err, discovery.ErrFullCluster) {
		t.Fatalf("third registration: err = %v, want %v", err, discovery.ErrFullCluster)
	}
}

func TestSizeKeyErrors(t *testing.T) {
	cli, ep := startDiscoveryService(t)
	_, err := discovery.JoinCluster(testCtx(t), zap.NewNop(), dcfg("tok-nosize", ep), 1, "a=http://10.0.0.1:2380")
	if !errors.Is(err, discovery.ErrSizeNotFound) {
		t.Fatalf("missing size: err = %v, want %v", err, discovery.ErrSizeNotFound)
	}
	for _, bad := range []string{"x", "0", "-1"} {
		put(t, cli, discovery.SizeKey("tok-bad"), bad)
		_, err := discovery.JoinCluster(testCtx(t), zap.NewNop(), dcfg("tok-bad", ep), 1, "a=http://10.0.0.1:2380")
		if !errors.Is(err, discovery.ErrBadSizeKey) {
			t.Fatalf("size %q: err = %v, want %v", bad, err, discovery.ErrBadSizeKey)
		}
	}
}

func TestUnreachableServiceGivesUp(t *testing.T) {
	u := freeport.URL(t) // nothing listens there
	ep := u.String()
	cfg := dcfg("tok", ep)
	cfg.DialTimeout, cfg.RequestTimeout, cfg.MaxRetries = 0, 100*time.Millisecond, 1
	_, err := discovery.JoinCluster(testCtx(t), zap.NewNop(), cfg, 1, "a=http://10.0.0.1:2380")
	if !errors.Is(err, discovery.ErrTooManyRetries) {
		t.Fatalf("err = %v, want %v", err, discovery.ErrTooManyRetries)
	}
}

// TestEmbedBootstrapsThroughDiscovery starts three members in-process that
// only share a discovery token; a fourth one is refused.
func TestEmbedBootstrapsThroughDiscovery(t *testing.T) {
	cli, ep := startDiscoveryService(t)
	const token = "tok-embed"
	put(t, cli, discovery.SizeKey(token), "3")

	newCfg := func(name string) *config.Config {
		cfg := memberConfig(t, name)
		cfg.InitialCluster = ""
		cfg.InitialClusterToken = "embed-cluster"
		cfg.DiscoveryCfg.Token = token
		cfg.DiscoveryCfg.Client.Endpoints = []string{ep}
		return cfg
	}
	cfgs := make([]*config.Config, 3)
	for i := range cfgs {
		cfgs[i] = newCfg(fmt.Sprintf("m%d", i))
	}
	members := make([]*embed.Member, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			members[i], errs[i] = embed.StartMemberWith(cfgs[i], zap.NewNop(), embed.Extensions{Discover: discovery.Bootstrap})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		t.Cleanup(members[i].Close)
	}
	for _, m := range members {
		waitReady(t, m)
	}
	var urls []string
	for _, c := range cfgs {
		urls = append(urls, c.AdvertiseClientUrls[0].String())
	}
	mc, err := client.New(client.Config{Endpoints: urls, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	resp, err := mc.MemberList(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Members) != 3 {
		t.Fatalf("member list has %d members, want 3: %v", len(resp.Members), resp.Members)
	}
	if _, err := mc.Put(testCtx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}

	// A fourth member with the same token is refused.
	_, err = embed.StartMemberWith(newCfg("m3"), zap.NewNop(), embed.Extensions{Discover: discovery.Bootstrap})
	if !errors.Is(err, discovery.ErrFullCluster) {
		t.Fatalf("fourth member: err = %v, want %v", err, discovery.ErrFullCluster)
	}
}
