package robustness

import (
	"context"
	"fmt"
	"maps"
	"runtime/metrics"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// revLog is the cluster's revision history after the run, read back
// revision by revision: which value was written at which revision.
type revLog struct {
	final int64
	putAt map[string]int64 // value -> revision that wrote it
	// events is the watch event stream the history implies for
	// keyPrefix, in revision order (by key within a revision).
	events []histEvent
}

// revArchive holds the key space at the revisions a compaction is about
// to make unreadable: readRevLog takes them from here. It also logs the
// compactions themselves, which excuse watch events without their
// prev_kv (checkWatch).
type revArchive struct {
	mu          sync.Mutex
	snaps       [][]kv // snaps[r], r = 1..len-1; snaps[0] is unused
	compactions []compaction
}

// compaction is a compaction request of the run: at rev, sent at issued
// (the members may apply it at any time after that, or never).
type compaction struct {
	rev    int64
	issued time.Time
}

// noteCompaction logs a compaction at rev about to be sent.
func (a *revArchive) noteCompaction(rev int64, issued time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.compactions = append(a.compactions, compaction{rev: rev, issued: issued})
}

// compactionsSince returns the logged compactions with their issue time
// on the test clock that started at start, in nanoseconds.
func (a *revArchive) compactionsSince(start time.Time) []compactionAt {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]compactionAt, len(a.compactions))
	for i, c := range a.compactions {
		out[i] = compactionAt{rev: c.rev, at: int64(c.issued.Sub(start))}
	}
	return out
}

// upTo is the newest archived revision (0: none).
func (a *revArchive) upTo() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int64(max(len(a.snaps)-1, 0))
}

// save archives the revisions up to rev that are not archived yet, read
// from cli (serializably: its member must have applied rev).
func (a *revArchive) save(cli *clientv3.Client, rev int64) error {
	from := a.upTo() + 1
	if rev < from {
		return nil
	}
	snaps, err := readSnaps(cli, from, rev)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.snaps) == 0 {
		a.snaps = [][]kv{nil}
	}
	a.snaps = append(a.snaps, snaps...)
	return nil
}

// readRevLog reads the key space at every revision 1..final, from the
// archive and then from cli (serializably, the member must be up to
// date), and derives the revision of every write. It also checks that the
// history is well-formed: every revision after the first changes
// something, and nothing changes without the revision saying so. Problems
// are returned, not fatal.
func readRevLog(cli *clientv3.Client, final int64, archive *revArchive) (*revLog, []string, error) {
	archive.mu.Lock()
	snaps := slices.Clone(archive.snaps)
	archive.mu.Unlock()
	if len(snaps) == 0 {
		snaps = [][]kv{nil}
	}
	if from := int64(len(snaps)); from <= final {
		rest, err := readSnaps(cli, from, final)
		if err != nil {
			return nil, nil, err
		}
		snaps = append(snaps, rest...)
	}
	l, problems := deriveRevLog(snaps[:final+1], final)
	return l, problems, nil
}

// readSnaps reads the key space at revisions from..to; element i is
// revision from+i.
func readSnaps(cli *clientv3.Client, from, to int64) ([][]kv, error) {
	snaps := make([][]kv, to-from+1)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	next := make(chan int64)
	for range 4 {
		wg.Go(func() {
			for r := range next {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := cli.Get(ctx, keyPrefix, clientv3.WithPrefix(), clientv3.WithRev(r), clientv3.WithSerializable())
				cancel()
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("reading revision %d: %w", r, err)
				}
				if err == nil {
					snaps[r-from] = toKVs(resp.Kvs)
				}
				mu.Unlock()
			}
		})
	}
	for r := from; r <= to; r++ {
		next <- r
	}
	close(next)
	wg.Wait()
	return snaps, firstErr
}

// deriveRevLog derives the writes and events from snaps[r], r = 1..final.
func deriveRevLog(snaps [][]kv, final int64) (*revLog, []string) {
	l := &revLog{final: final, putAt: map[string]int64{}}
	var problems []string
	prev := map[string]kv{}
	for r := int64(1); r <= final; r++ {
		cur := map[string]kv{}
		changed := false
		var revEvents []histEvent
		for _, k := range snaps[r] {
			cur[k.key] = k
			if k.mod > r || k.createRev > k.mod {
				problems = append(problems, fmt.Sprintf("revision %d: impossible kv %v", r, k))
			}
			if k.mod == r {
				changed = true
				if at, dup := l.putAt[k.value]; dup {
					problems = append(problems, fmt.Sprintf("value %q written twice, at revisions %d and %d", k.value, at, r))
				}
				l.putAt[k.value] = r
				ev := histEvent{kv: k}
				if p, ok := prev[k.key]; ok {
					ev.prev = &p
				}
				revEvents = append(revEvents, ev)
				continue
			}
			if p, ok := prev[k.key]; !ok || p != k {
				problems = append(problems, fmt.Sprintf("revision %d: %v changed without its mod revision (before: %v)", r, k, p))
			}
		}
		for key, p := range prev {
			if _, ok := cur[key]; !ok {
				changed = true
				revEvents = append(revEvents, histEvent{del: true, kv: kv{key: key, mod: r}, prev: &p})
			}
		}
		sort.Slice(revEvents, func(i, j int) bool { return revEvents[i].kv.key < revEvents[j].kv.key })
		l.events = append(l.events, revEvents...)
		if r > 1 && !changed {
			problems = append(problems, fmt.Sprintf("revision %d changed nothing", r))
		}
		prev = cur
	}
	return l, problems
}

// buildHistory turns the records into porcupine operations, using the
// revision history to resolve writes of unknown outcome:
//   - an acknowledged put or successful txn must be in the revision
//     history at exactly the revision it was acknowledged with (a lost or
//     misplaced write is reported);
//   - a put or txn of unknown outcome is dropped if its (unique) value was
//     never written, and otherwise must apply at the revision that wrote
//     it, before any request that saw that revision returned;
//   - deletes and revokes of unknown outcome may or may not have applied
//     and stay pending until the end;
//   - serializable gets are checked here, not by porcupine: every value
//     they return was written at the mod revision they report.
func buildHistory(recs []record, l *revLog) ([]porcupine.Operation, []string) {
	var problems []string
	var end int64
	type revRet struct{ rev, ret int64 }
	var seen []revRet
	for _, r := range recs {
		end = max(end, r.ret)
		if !r.out.unknown && !r.serializable {
			seen = append(seen, revRet{r.out.rev, r.ret})
		}
	}
	end += int64(time.Hour)
	// minRetFrom[i]: the earliest return among requests that saw a
	// revision >= seen[i].rev.
	sort.Slice(seen, func(i, j int) bool { return seen[i].rev < seen[j].rev })
	minRetFrom := make([]int64, len(seen)+1)
	minRetFrom[len(seen)] = end
	for i := len(seen) - 1; i >= 0; i-- {
		minRetFrom[i] = min(minRetFrom[i+1], seen[i].ret)
	}
	firstSeeing := func(rev int64) int64 {
		i := sort.Search(len(seen), func(i int) bool { return seen[i].rev >= rev })
		return minRetFrom[i]
	}

	var ops []porcupine.Operation
	for _, r := range recs {
		in, out, ret := r.in, r.out, r.ret
		if r.serializable {
			for _, k := range out.kvs {
				if at, ok := l.putAt[k.value]; !ok || at != k.mod {
					problems = append(problems, fmt.Sprintf("client %d: serializable get(%q) returned %v, but the revision history has that value at revision %d", r.client, in.key, k, at))
				}
			}
			if out.rev > l.final {
				problems = append(problems, fmt.Sprintf("client %d: serializable get(%q) at revision %d, beyond the final revision %d", r.client, in.key, out.rev, l.final))
			}
			continue
		}
		writes := in.kind == opPut || in.kind == opTxn
		switch {
		case writes && !out.unknown && (in.kind == opPut || out.succeeded):
			if at, ok := l.putAt[in.value]; !ok || at != out.rev {
				problems = append(problems, fmt.Sprintf("client %d: %s acknowledged, but the revision history has the value at revision %d (0: never written)", r.client, describe(in, out), at))
			}
		case writes && out.unknown:
			at, ok := l.putAt[in.value]
			if !ok {
				continue // never applied (or, for a txn, its compare failed)
			}
			in.appliedAt = at
			ret = max(r.call, firstSeeing(at))
		case out.unknown:
			ret = end
		}
		ops = append(ops, porcupine.Operation{ClientId: r.client, Input: in, Call: r.call, Output: out, Return: ret})
	}
	// Values in the revision history must come from some request.
	attempted := map[string]bool{}
	for _, r := range recs {
		if r.in.kind == opPut || r.in.kind == opTxn {
			attempted[r.in.value] = true
		}
	}
	for _, v := range slices.Sorted(maps.Keys(l.putAt)) {
		if !attempted[v] {
			problems = append(problems, fmt.Sprintf("value %q at revision %d was never written by any client", v, l.putAt[v]))
		}
	}
	return ops, problems
}

// linearizabilityVerdict is what the porcupine step of a round concluded.
type linearizabilityVerdict struct {
	ran     bool                  // porcupine ran (it does not on a history already shown wrong)
	result  porcupine.CheckResult // porcupine's answer, when it ran
	aborted string                // why the check was stopped before it finished, if it was
	failure string                // the test failure to report, empty when the round passes this step
}

// porcupineBound limits one porcupine run: a clean round's history checks in
// about a second, while an illegal one can make the search grow until the
// machine runs out of memory (soak round 13 reached 23 GB).
type porcupineBound struct {
	timeout   time.Duration
	heapLimit uint64 // bytes of live heap at which the check is abandoned; 0 = no limit
}

// checkFunc runs porcupine on the round's history under ctx (see
// checkLinearizable); a fake stands in for it in the unit tests.
type checkFunc func(ctx context.Context) (porcupine.CheckResult, error)

// decideLinearizability runs the porcupine check unless the other checks
// already found violations: porcupine adds nothing to a history known to be
// wrong and may search it for hours. A check stopped by the bound fails the
// round as "linearizability check timed out": an unchecked history is no pass.
func decideLinearizability(violations int, bound porcupineBound, heap func() uint64, check checkFunc) linearizabilityVerdict {
	if violations > 0 {
		return linearizabilityVerdict{failure: fmt.Sprintf("linearizability check skipped: the history checks found %d violation(s)", violations)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound.timeout)
	defer cancel()
	var overHeap atomic.Bool
	stopWatch := watchHeap(ctx, bound.heapLimit, heap, func() { overHeap.Store(true); cancel() })
	res, err := check(ctx)
	stopWatch()
	v := linearizabilityVerdict{ran: true, result: res}
	switch {
	case overHeap.Load():
		v.aborted = fmt.Sprintf("live heap above %d MiB", bound.heapLimit>>20)
	case ctx.Err() != nil || res == porcupine.Unknown:
		v.aborted = fmt.Sprintf("no answer within %v", bound.timeout)
	}
	switch {
	case v.aborted != "":
		v.failure = "linearizability check timed out (" + v.aborted + ")"
	case res == porcupine.Illegal:
		v.failure = "history is not linearizable"
	}
	if err != nil && v.failure != "" {
		v.failure += fmt.Sprintf("; writing the visualization: %v", err)
	}
	return v
}

// watchHeap calls over once when heap() exceeds limit, sampling until ctx
// ends or the returned stop is called; stop waits for the sampler to exit.
func watchHeap(ctx context.Context, limit uint64, heap func() uint64, over func()) (stop func()) {
	if limit == 0 {
		return func() {}
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if heap() > limit {
				over()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-exited }
}

// liveHeap is the process's live heap in bytes.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// abortable wraps m so that every step fails once ctx is done: porcupine then
// backtracks to the start and returns at once (its own timeout only covers
// the wall clock), and the caller, seeing ctx done, discards the answer.
func abortable(ctx context.Context, m porcupine.Model) porcupine.Model {
	inner := m.StepContext
	if inner == nil {
		step := m.Step
		inner = func(_ context.Context, st, in, out interface{}) (bool, interface{}) { return step(st, in, out) }
	}
	m.Step = nil
	m.StepContext = func(pctx context.Context, st, in, out interface{}) (bool, interface{}) {
		if ctx.Err() != nil {
			return false, st
		}
		return inner(pctx, st, in, out)
	}
	return m
}

// checkLinearizable runs porcupine until ctx ends; unless the history is
// linearizable it writes the visualization, with the faults as annotations,
// to path (a partial one when ctx stopped the search).
func checkLinearizable(ctx context.Context, ops []porcupine.Operation, faults []faultEvent, path string) (porcupine.CheckResult, error) {
	var limit time.Duration // porcupine's own timeout: the time left to ctx
	if dl, ok := ctx.Deadline(); ok {
		limit = max(time.Until(dl), time.Millisecond)
	}
	res, info := porcupine.CheckOperationsVerbose(abortable(ctx, kvModel), ops, limit)
	if res == porcupine.Ok && ctx.Err() == nil {
		return res, nil
	}
	var ann []porcupine.Annotation
	for _, f := range faults {
		ann = append(ann, porcupine.Annotation{Tag: "faults", Start: f.start, End: f.end, Description: fmt.Sprintf("%s m%d", f.name, f.member), BackgroundColor: "#fdd"})
	}
	info.AddAnnotations(ann)
	return res, porcupine.VisualizePath(kvModel, info, path)
}
