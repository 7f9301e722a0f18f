package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// profiler fetches Go runtime profiles from a member started with
// --enable-pprof (cairn and etcd both serve them at <client URL>/debug/pprof/)
// while a maintenance call runs, so that a slow probe window can be read as
// a CPU profile and an execution trace of that very window. It is off
// unless --profile-seconds is set.
type profiler struct {
	dir     string
	seconds int
	client  *http.Client
}

func newProfiler(dir string, seconds int) *profiler {
	if seconds <= 0 {
		return nil
	}
	return &profiler{dir: dir, seconds: seconds, client: &http.Client{Timeout: time.Duration(seconds+30) * time.Second}}
}

// pprofArgs are the member flags a profiled run needs.
func (p *profiler) pprofArgs() []string {
	if p == nil {
		return nil
	}
	return []string{"--enable-pprof"}
}

// capture starts fetching a CPU profile, an execution trace and an
// allocation profile, each p.seconds long, of the member at clientURL,
// into files named <label>.cpu.pprof, <label>.trace and
// <label>.allocs.pprof. The returned wait blocks until all are written; a failed fetch is logged, not fatal: a profile is
// a reading aid, never a figure of the report.
func (p *profiler) capture(ctx context.Context, clientURL, label string, logf func(string, ...any)) (wait func()) {
	if p == nil {
		return func() {}
	}
	var wg sync.WaitGroup
	// allocs?seconds=N is the allocations made during the window (a delta):
	// a probe's tail during maintenance is often the collector's doing,
	// and this says which code made it run.
	for _, kind := range []struct{ path, ext string }{{"profile", "cpu.pprof"}, {"trace", "trace"}, {"allocs", "allocs.pprof"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := fmt.Sprintf("%s/debug/pprof/%s?seconds=%d", strings.TrimRight(clientURL, "/"), kind.path, p.seconds)
			file := filepath.Join(p.dir, label+"."+kind.ext)
			if err := p.fetch(ctx, url, file); err != nil {
				logf("profile %s: %v", file, err)
			}
		}()
	}
	return wg.Wait
}

func (p *profiler) fetch(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
