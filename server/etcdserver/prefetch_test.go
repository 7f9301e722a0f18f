package etcdserver

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestPrefetchOnlyOnAPlainRestart(t *testing.T) {
	fresh := testConfig(t.TempDir())
	if f := prefetchKV(fresh, backendHooks{}); f.done != nil {
		t.Fatal("a new member opened its db before bootstrapping raft")
	}
	restarted := testConfig(t.TempDir())
	startServer(t, restarted).Stop()
	forced := *restarted
	forced.ForceNewCluster = true
	if f := prefetchKV(&forced, backendHooks{}); f.done != nil {
		t.Fatal("--force-new-cluster opened the db twice")
	}
	c, err := restarted.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	f := prefetchKV(c, backendHooks{})
	if f.done == nil {
		t.Fatal("a restart did not prefetch its stores")
	}
	f.discard()
}

func TestPrefetchedRestartKeepsTheState(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.IndexCheckpoint = true
	s := startServer(t, cfg)
	for i := range 50 {
		mustPut(t, s, fmt.Sprintf("k%02d", i%20), fmt.Sprint(i))
	}
	want := readState(t, s)
	s.Stop()
	for round := range 2 { // with the index checkpoint, then without
		if round == 1 {
			must(t, os.Remove(filepath.Join(cfg.memberDir(), "index.ckpt")))
		}
		s = startServer(t, cfg)
		compareState(t, want, readState(t, s))
		s.Stop()
	}
}

// A restart refused while reading the WAL must close the db it opened in
// the background: bbolt's lock would keep every later open of the file
// (cairnutl, a fixed restart in the same process) waiting.
func TestRefusedRestartReleasesTheDB(t *testing.T) {
	cfg, _, _ := damagedMember(t, 120, 20)
	snaps, err := filepath.Glob(filepath.Join(cfg.snapDir(), "*.snap"))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no .snap files: %v", err)
	}
	sort.Strings(snaps)
	must(t, os.Remove(snaps[len(snaps)-1]))
	refusal(t, cfg)
	db, err := bolt.Open(cfg.backendPath(), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("the db is still locked after the refused restart: %v", err)
	}
	db.Close()
}
