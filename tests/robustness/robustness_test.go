package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/cairnkv/cairn/tests/compat/etcdtools"
	"github.com/cairnkv/cairn/tests/harness"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Environment variables that control a run.
const (
	// seedEnv fixes the seed of every random choice (requests, faults).
	seedEnv = "CAIRN_ROBUSTNESS_SEED"
	// binaryEnv selects the server: "etcd" runs the real etcd v3.7.3
	// (built by tests/compat/etcdtools) to validate the checker; any
	// other non-empty value is the path of a binary.
	binaryEnv = "CAIRN_ROBUSTNESS_BINARY"
	// dirEnv is where logs and the visualization go (default: a new
	// temporary directory, removed if the test passes).
	dirEnv = "CAIRN_ROBUSTNESS_DIR"
	// durationEnv overrides how long traffic and faults run (a Go
	// duration, e.g. 2m).
	durationEnv = "CAIRN_ROBUSTNESS_DURATION"
	// faultsEnv restricts the faults to a comma-separated list of names
	// (faults_test.go), e.g. to reproduce one kind of failure.
	faultsEnv = "CAIRN_ROBUSTNESS_FAULTS"
)

var cairnBin string

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, func() error {
		if os.Getenv(binaryEnv) != "" {
			return nil
		}
		// With failpoints, so that members can be crashed where
		// crash-recovery bugs hide (faults_crash_test.go).
		var err error
		cairnBin, err = harness.Build("cairn", "failpoints")
		return err
	}))
}

func serverBinary(t *testing.T) string {
	switch b := os.Getenv(binaryEnv); b {
	case "":
		return cairnBin
	case "etcd":
		p, err := etcdtools.Path("etcd")
		if err != nil {
			t.Fatalf("building etcd %s: %v", etcdtools.Version, err)
		}
		return p
	default:
		return b
	}
}

// scenario sizes a run.
type scenario struct {
	clients  int
	duration time.Duration
	traffic  trafficConfig
	// faults restricts the faults (selectFaults); "" means all.
	faults string
}

func TestRobustness(t *testing.T) {
	sc := scenario{clients: 8, duration: 2 * time.Minute,
		traffic: trafficConfig{keys: 10, opInterval: 15 * time.Millisecond, opTimeout: 3 * time.Second}}
	if testing.Short() {
		sc = scenario{clients: 5, duration: 30 * time.Second,
			traffic: trafficConfig{keys: 10, opInterval: 20 * time.Millisecond, opTimeout: 3 * time.Second}}
	}
	sc.faults = os.Getenv(faultsEnv)
	runSeeded(t, sc)
}

// TestRobustnessMembership runs only the membership faults (member
// replacement, learner promotion), which the random schedule of
// TestRobustness picks only now and then.
func TestRobustnessMembership(t *testing.T) {
	sc := scenario{clients: 5, duration: time.Minute, faults: membershipFaults,
		traffic: trafficConfig{keys: 10, opInterval: 20 * time.Millisecond, opTimeout: 3 * time.Second}}
	if testing.Short() {
		sc.duration = 10 * time.Second
	}
	runSeeded(t, sc)
}

// runSeeded runs sc with the seed, server and duration the environment
// asks for.
func runSeeded(t *testing.T, sc scenario) {
	if d := os.Getenv(durationEnv); d != "" {
		v, err := time.ParseDuration(d)
		if err != nil {
			t.Fatalf("%s: %v", durationEnv, err)
		}
		sc.duration = v
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(seedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", seedEnv, err)
		}
		seed = v
	}
	bin := serverBinary(t)
	t.Logf("seed %d (rerun with %s=%d), server %s, %d clients, %v", seed, seedEnv, seed, bin, sc.clients, sc.duration)
	runScenario(t, bin, seed, sc)
}

// runDir returns the directory for logs and the visualization; a
// temporary one is removed when the test passes.
func runDir(t *testing.T) string {
	if d := os.Getenv(dirEnv); d != "" {
		d = filepath.Join(d, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d, err := os.MkdirTemp("", "cairn-robustness-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s", d)
			return
		}
		os.RemoveAll(d)
	})
	return d
}

func runScenario(t *testing.T, bin string, seed uint64, sc scenario) {
	dir := runDir(t)
	c := startCluster(t, bin, dir, 3)
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	ws, err := startWatchers(c, now)
	if err != nil {
		t.Fatal(err)
	}
	watchStopped := false
	defer func() {
		if !watchStopped {
			ws.stop()
		}
	}()

	rng := rand.New(rand.NewPCG(seed, 0))
	tcs := make([]*trafficClient, sc.clients)
	for i := range tcs {
		cli, err := newClient(c.endpoints)
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		tcs[i] = &trafficClient{id: i, cli: cli, rng: rand.New(rand.NewPCG(seed, uint64(i)+1)), cfg: sc.traffic, now: now, seen: map[string]kv{}}
	}

	ctx, cancel := context.WithTimeout(context.Background(), sc.duration)
	defer cancel()
	var wg sync.WaitGroup
	for _, tc := range tcs {
		wg.Go(func() { tc.run(ctx) })
	}
	var events []faultEvent
	wg.Go(func() { events = injectFaults(ctx, c, sc.faults, rng, now, t.Logf) })
	wg.Wait()
	trafficEnd := time.Since(start)

	for _, ev := range events {
		if ev.err != nil {
			t.Fatalf("cluster did not recover from fault %s: %v", ev, ev.err)
		}
	}

	// Let the cluster settle, then compare the members.
	final, err := c.settle(recoverTimeout)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range ws.catchUp(final, 30*time.Second) {
		t.Errorf("watch: %s did not reach the final revision %d", b, final)
	}
	watchLogs := ws.stop()
	watchStopped = true
	// violations counts what the checks before porcupine found.
	violations := 0
	hashes, err := c.hashKVs(final)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hashes {
		if h.Hash != hashes[0].Hash || h.CompactRevision != hashes[0].CompactRevision || h.HashRevision != hashes[0].HashRevision {
			violations++
			t.Errorf("HashKV at revision %d differs: m0 hash=%d compact=%d, m%d hash=%d compact=%d",
				final, hashes[0].Hash, hashes[0].CompactRevision, i, h.Hash, h.CompactRevision)
		}
	}

	// Final linearizable reads of every key, part of the history: every
	// acknowledged write that was not overwritten must still be there.
	var recs []record
	for _, tc := range tcs {
		recs = append(recs, tc.recs...)
		violations += len(tc.anomalies)
		for _, a := range tc.anomalies {
			t.Errorf("anomaly: %s", a)
		}
	}
	reader := &trafficClient{id: sc.clients, cli: c.admin[0], now: now, seen: map[string]kv{}, cfg: sc.traffic}
	for k := range sc.traffic.keys {
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		reader.get(rctx, keyName(k), false, false)
		rcancel()
	}
	if len(reader.recs) != sc.traffic.keys {
		t.Fatalf("final reads: only %d of %d succeeded", len(reader.recs), sc.traffic.keys)
	}
	recs = append(recs, reader.recs...)
	if r := reader.recs[0].out.rev; r != final {
		t.Fatalf("revision moved from %d to %d after the cluster settled", final, r)
	}

	l, problems, err := readRevLog(c.admin[0], final, &c.archive)
	if err != nil {
		t.Fatal(err)
	}
	ops, more := buildHistory(recs, l)
	problems = append(problems, more...)

	stats := map[string]int{}
	for _, r := range recs {
		switch {
		case r.serializable:
			stats["serializable"]++
		case r.out.unknown && strings.Contains(r.out.err, rpctypes.ErrNoSpace.Error()):
			stats["nospace"]++
		case r.out.unknown:
			stats["unknown"]++
		default:
			stats["ok"]++
		}
	}
	t.Logf("traffic %v: %d requests (%v), %d in the history, final revision %d, %d faults:",
		trafficEnd.Round(time.Millisecond), len(recs), stats, len(ops), final, len(events))
	for _, ev := range events {
		t.Logf("  %s", ev)
		if isMembershipFault(ev.name) {
			t.Logf("    writes issued during it: %s", availability(recs, ev, int64(sc.duration)))
		}
	}
	violations += len(problems)
	for _, p := range problems {
		t.Errorf("%s", p)
	}
	compactions := c.archive.compactionsSince(start)
	for _, wl := range watchLogs {
		t.Logf("watch %s", watchStats(wl))
		wp := checkWatch(wl, l.events, final, compactions)
		violations += len(wp)
		for _, p := range truncate(wp) {
			t.Errorf("watch (seed %d): %s", seed, p)
		}
		if len(wp) > 0 {
			path := filepath.Join(dir, fmt.Sprintf("watch-m%d-%d.txt", wl.member, wl.id))
			if err := wl.dump(path); err != nil {
				t.Errorf("writing %s: %v", path, err)
			}
			t.Logf("watch log of %s: %s", wl.name(), path)
		}
	}

	checkStart := time.Now()
	vis := filepath.Join(dir, "linearizability.html")
	v := decideLinearizability(violations, roundPorcupineBound, liveHeap, func(ctx context.Context) (porcupine.CheckResult, error) {
		return checkLinearizable(ctx, ops, events, vis)
	})
	if !v.ran {
		t.Errorf("%s (seed %d)", v.failure, seed)
		return
	}
	t.Logf("porcupine: %s in %v", v.result, time.Since(checkStart).Round(time.Millisecond))
	if v.failure != "" {
		t.Errorf("%s (seed %d); visualization: %s", v.failure, seed, vis)
	}
}

// roundPorcupineBound bounds the porcupine check of a round: a clean round
// checks in about a second on this machine, so two minutes is far past any
// honest search, and 4 GiB of live heap leaves the members and the machine
// room (a test process of 23 GB was killed in soak round 13).
var roundPorcupineBound = porcupineBound{timeout: 2 * time.Minute, heapLimit: 4 << 30}
