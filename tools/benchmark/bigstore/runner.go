package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cairnkv/cairn/tools/benchmark/cluster"
	"github.com/cairnkv/cairn/tools/benchmark/procfs"
)

// readyLine is the log line both servers write once they serve clients.
const readyLine = "ready to serve client requests"

// server is one server under test: its binary, its single member (which
// keeps its data directory across restarts) and its results.
type server struct {
	name string
	bin  string
	dir  string
	c    *cluster.Cluster
	res  *serverResult
}

func (s *server) member() *cluster.Member { return s.c.Members[0] }

// pid is the running member's process ID, or 0 when none runs (the
// noise meter then has no server to subtract).
func (s *server) pid() int {
	if s.c == nil || !s.member().Running() {
		return 0
	}
	return s.member().PID()
}

// runner holds one run's configuration, servers and results.
type runner struct {
	cfg     config
	tmp     string
	log     func(string, ...any)
	servers []*server
	res     *result
	// procRoot is /proc; tests may point it elsewhere.
	procRoot string
	prof     *profiler // nil unless --profile-seconds
}

func newRunner(cfg config, tmp string, log func(string, ...any)) *runner {
	r := &runner{cfg: cfg, tmp: tmp, log: log, procRoot: procfs.Root, res: newResult(cfg), prof: newProfiler(cfg.out, cfg.profileSeconds)}
	add := func(name, bin string) {
		s := &server{name: name, bin: bin, dir: filepath.Join(tmp, name), res: &serverResult{}}
		r.servers = append(r.servers, s)
		r.res.Servers = append(r.res.Servers, name)
		r.res.Runs[name] = s.res
	}
	add("cairn", cfg.cairnBin)
	if cfg.withEtcd {
		add("etcd", cfg.etcdBin)
	}
	return r
}

// runAll runs every phase, the servers taking turns. Every turn ends with
// the member stopped; after a failure whatever still runs is stopped.
func (r *runner) runAll(ctx context.Context) error {
	defer func() {
		for _, s := range r.servers {
			if s.c != nil {
				s.c.Stop()
			}
		}
	}()
	for _, t := range r.turns() {
		for _, s := range r.servers {
			for _, p := range t {
				r.log("%s: %s", s.name, p.name)
				if err := r.phase(ctx, s, p.name, p.do); err != nil {
					return fmt.Errorf("%s, %s: %w", s.name, p.name, err)
				}
			}
		}
	}
	return nil
}

// step is one phase of a server's turn.
type step struct {
	name string
	do   func(context.Context, *server) error
}

// turns lists the run's turns in order. Each server runs a whole turn
// (one or more phases, ending with its member stopped) before the next
// server runs the same turn, so only one server is up at a time.
func (r *runner) turns() [][]step {
	turns := [][]step{{{"load v1", r.loadFirst}, {"load v2", r.loadSecond}}}
	for i := range r.cfg.restarts {
		turns = append(turns, []step{{fmt.Sprintf("restart %d", i+1), r.restart}})
	}
	maintenance := []step{{"compaction", r.compaction}}
	if !r.cfg.skipDefrag {
		maintenance = append(maintenance, step{"defrag", r.defrag})
	}
	maintenance = append(maintenance, step{"stop", func(_ context.Context, s *server) error {
		_, err := r.stop(s)
		return err
	}})
	return append(turns, maintenance)
}

// phase runs do and records its duration, the load average and the CPU
// used by other processes while it ran.
func (r *runner) phase(ctx context.Context, s *server, name string, do func(context.Context, *server) error) error {
	before := r.markCPU(s)
	err := do(ctx, s)
	after := r.markCPU(s)
	r.res.Phases = append(r.res.Phases, phaseNoise(s.name, name, before, after))
	return err
}

func (r *runner) markCPU(s *server) cpuMark {
	m, err := readCPUMark(r.procRoot, s.pid(), time.Now())
	if err != nil {
		r.log("cannot read /proc for the noise figures: %v", err)
	}
	return m
}

func (r *runner) memberOptions(s *server) cluster.Options {
	return cluster.Options{
		Bin:        s.bin,
		Dir:        s.dir,
		Members:    1,
		ExtraArgs:  append([]string{"--quota-backend-bytes", strconv.FormatInt(r.cfg.quota, 10)}, r.prof.pprofArgs()...),
		WatchLines: []string{readyLine},
	}
}

// loadFirst starts a fresh member and writes the first version.
func (r *runner) loadFirst(ctx context.Context, s *server) error {
	c, err := cluster.Start(ctx, r.memberOptions(s))
	if err != nil {
		return err
	}
	s.c = c
	return r.loadVersion(ctx, s, 1)
}

// loadSecond writes the second version and stops the member; that stop
// is the first restart's SIGTERM.
func (r *runner) loadSecond(ctx context.Context, s *server) error {
	if err := r.loadVersion(ctx, s, 2); err != nil {
		return err
	}
	_, err := r.stop(s)
	return err
}

// stopTimeout is how long a big store may take to exit after SIGTERM
// before it is killed (and the run fails).
const stopTimeout = 5 * time.Minute

// stop stops a running member and records the time SIGTERM took.
func (r *runner) stop(s *server) (time.Duration, error) {
	if s.c == nil || !s.member().Running() {
		return 0, nil
	}
	took, err := s.member().Stop(stopTimeout)
	if err != nil {
		return took, err
	}
	s.res.Stops = append(s.res.Stops, took.Seconds())
	return took, nil
}

// restart measures one start (exec to the ready line and to the first
// linearizable Get) and then stops the member again; the SIGTERM that
// preceded this start is paired with it.
func (r *runner) restart(ctx context.Context, s *server) error {
	sample, err := timedStart(ctx, s.member(), r.procRoot)
	if err != nil {
		return err
	}
	if n := len(s.res.Restarts); n < len(s.res.Stops) {
		sample.StopSeconds = s.res.Stops[n]
	}
	s.res.Restarts = append(s.res.Restarts, sample)
	_, err = r.stop(s)
	return err
}
