package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/compat/etcdtools"
)

// TestSmallRun runs the whole benchmark at a tiny size against real
// processes: cairn built from the tree and, when its binary is already
// cached (building it takes minutes), etcd. It checks that every figure
// was measured and that the run did what it says (every key written
// twice, the revision that follows, probe puts that all succeeded), not
// how fast anything was.
func TestSmallRun(t *testing.T) {
	cfg := defaultConfig()
	cfg.keys, cfg.restarts = 100, 1
	cfg.clients, cfg.conns = 10, 2
	cfg.window, cfg.probeKeys = 200*time.Millisecond, 10
	cfg.out = filepath.Join(t.TempDir(), "report")
	if dir, err := etcdtools.Dir(); err == nil {
		if bin := filepath.Join(dir, "bin", "etcd"); fileExists(bin) {
			cfg.withEtcd, cfg.etcdBin = true, bin
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, cfg, t.Logf); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(cfg.out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	want := []string{"cairn"}
	if cfg.withEtcd {
		want = append(want, "etcd")
	}
	if strings.Join(res.Servers, ",") != strings.Join(want, ",") {
		t.Fatalf("servers %v, want %v", res.Servers, want)
	}
	for _, name := range want {
		t.Run(name, func(t *testing.T) { checkServerResult(t, cfg, res.Runs[name]) })
	}
	md, err := os.ReadFile(filepath.Join(cfg.out, "report.md"))
	if err != nil || !strings.Contains(string(md), "| v2 load throughput (ops/s) |") {
		t.Errorf("report.md: %v\n%s", err, md)
	}
	// load v1, v2, one restart, compaction, defrag, stop, for each server.
	if len(res.Phases) != 6*len(want) {
		t.Errorf("%d phases recorded, want %d: %+v", len(res.Phases), 6*len(want), res.Phases)
	}
}

func checkServerResult(t *testing.T, cfg config, r *serverResult) {
	if r == nil || len(r.Versions) != 2 {
		t.Fatalf("result %+v, want two versions", r)
	}
	for i, v := range r.Versions {
		if v.Load.Succeeded != cfg.keys || v.Load.Failed != 0 || v.Load.P99 <= 0 {
			t.Errorf("v%d load %+v, want %d puts that all succeeded", i+1, v.Load, cfg.keys)
		}
		// A fresh store is at revision 1; each put adds one.
		if want := 1 + int64(i+1)*cfg.keys; v.Sizes.Revision != want {
			t.Errorf("v%d: revision %d, want %d", i+1, v.Sizes.Revision, want)
		}
		s := v.Sizes
		if s.PeakRSS <= 0 || s.RSS <= 0 || s.DBFile <= 0 || s.DBSize <= 0 || s.DBSizeInUse <= 0 || s.WAL <= 0 || s.DataDir < s.DBFile+s.WAL {
			t.Errorf("v%d sizes %+v", i+1, s)
		}
	}
	if len(r.Restarts) != cfg.restarts {
		t.Fatalf("%d restarts, want %d", len(r.Restarts), cfg.restarts)
	}
	for _, s := range r.Restarts {
		if s.StopSeconds <= 0 || s.ReadySeconds <= 0 || s.FirstGetSeconds <= 0 || s.RSSAtGet <= 0 {
			t.Errorf("restart %+v", s)
		}
	}
	for _, m := range []*maintenanceResult{r.Compaction, r.Defrag} {
		if m == nil || m.Error != "" || len(m.Windows) != 3 {
			t.Fatalf("maintenance %+v", m)
		}
		for _, w := range m.Windows {
			if w.Failed != 0 {
				t.Errorf("probe window %+v has errors", w)
			}
		}
		if m.Windows[0].Succeeded == 0 || m.Windows[2].Succeeded == 0 {
			t.Errorf("probe windows %+v: no puts before or after the call", m.Windows)
		}
	}
	// Everything up to the revision before the compaction call is gone.
	if c := r.Compaction; c.Revision <= 1+2*cfg.keys || c.After.DBSizeInUse <= 0 {
		t.Errorf("compaction at revision %d, sizes after %+v", c.Revision, c.After)
	}
	// How big the file is after defrag is the server's business (a tiny
	// store's file is mostly preallocation); that it was measured is ours.
	if d := r.Defrag; d.After.DBFile <= 0 || d.After.DBSizeInUse <= 0 || d.TookSeconds <= 0 {
		t.Errorf("defrag %+v", d)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
