package robustness

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Watch guarantees. Every member gets its own client and watchersPerMember
// prefix watches on keyPrefix from revision 1 (even ids with WithPrevKV),
// all with WithProgressNotify and WithRequireLeader, so that an isolated
// member cancels them and the watcher explicitly resumes from its last
// event's revision + 1. Progress is requested periodically during the run
// and at the end, until every watcher has covered the final revision.
// Every response and every resumption is recorded and checked against the
// event stream implied by the revision history (revLog.events):
//
//   - ordered: event revisions never go backwards;
//   - unique: no event is delivered twice;
//   - reliable: no event of the history is missing from the revisions a
//     watcher covered, and every delivered event is in the history, equal
//     to it (a cancel with a compact revision excuses what was compacted);
//   - prev_kv, for watchers that ask for it, is the history's previous
//     version of the key, and may be missing only where etcd leaves it
//     out too: when the previous version was compacted, i.e. a compaction
//     at the event's revision or later had been sent before the event
//     arrived (the server looks it up at revision - 1, below that
//     compaction) or the watcher had been canceled with such a compact
//     revision;
//   - atomic: all events of one revision arrive in one response;
//   - resumable: after a resumption the next event is the history's next
//     event after the last one seen;
//   - progress notifications never overtake events: a notify at revision P
//     comes after every event with revision <= P, and none follows it.

const watchersPerMember = 2

// histEvent is one event of the history (del: a delete, kv holds only the
// key and the revision).
type histEvent struct {
	del  bool
	kv   kv
	prev *kv
}

func (e histEvent) String() string {
	if e.del {
		return fmt.Sprintf("delete %q@%d", e.kv.key, e.kv.mod)
	}
	return fmt.Sprintf("put %q=%q@%d", e.kv.key, e.kv.value, e.kv.mod)
}

// watchResp is one recorded watch response, or a resumption marker.
type watchResp struct {
	at         int64 // test clock, when received
	resume     bool  // the watch was re-created from resumeRev
	resumeRev  int64 // for resume
	header     int64
	progress   bool
	canceled   bool
	compactRev int64
	err        string
	events     []histEvent
}

// watchLog is everything one watcher received.
type watchLog struct {
	member, id int
	prevKV     bool
	startRev   int64
	resps      []watchResp
}

func (l *watchLog) name() string { return fmt.Sprintf("m%d watcher %d", l.member, l.id) }

// watcher records one watch, re-creating it when it ends.
type watcher struct {
	cli    *clientv3.Client
	now    func() int64
	reqCtx context.Context // carries the stream's metadata, for RequestProgress

	mu      sync.Mutex
	log     watchLog
	covered int64 // highest event or progress revision seen
}

func toHistEvents(evs []*clientv3.Event) []histEvent {
	out := make([]histEvent, 0, len(evs))
	for _, e := range evs {
		h := histEvent{del: e.Type == mvccpb.DELETE}
		if e.Kv != nil {
			h.kv = toKVs([]*mvccpb.KeyValue{e.Kv})[0]
		}
		if e.PrevKv != nil {
			p := toKVs([]*mvccpb.KeyValue{e.PrevKv})[0]
			h.prev = &p
		}
		out = append(out, h)
	}
	return out
}

func (w *watcher) add(r watchResp) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.at = w.now()
	w.log.resps = append(w.log.resps, r)
	if r.progress {
		w.covered = max(w.covered, r.header)
	}
	for _, e := range r.events {
		w.covered = max(w.covered, e.kv.mod)
	}
}

func (w *watcher) run(ctx context.Context) {
	next := w.log.startRev
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			w.add(watchResp{resume: true, resumeRev: next})
		}
		wctx, cancel := context.WithCancel(w.reqCtx)
		opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithRev(next), clientv3.WithProgressNotify()}
		if w.log.prevKV {
			opts = append(opts, clientv3.WithPrevKV())
		}
		for resp := range w.cli.Watch(wctx, keyPrefix, opts...) {
			r := watchResp{header: resp.Header.Revision, progress: resp.IsProgressNotify(), canceled: resp.Canceled,
				compactRev: resp.CompactRevision, events: toHistEvents(resp.Events)}
			if err := resp.Err(); err != nil {
				r.err = shortErr(err)
			}
			if n := len(resp.Events); n > 0 {
				next = resp.Events[n-1].Kv.ModRevision + 1
			}
			if resp.CompactRevision > next {
				next = resp.CompactRevision
			}
			w.add(r)
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// watchers are all the watchers of a run.
type watchers struct {
	clis   []*clientv3.Client
	ws     []*watcher
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startWatchers opens the watchers before any traffic.
func startWatchers(c *cluster, now func() int64) (*watchers, error) {
	ctx, cancel := context.WithCancel(context.Background())
	all := &watchers{cancel: cancel}
	for i, ep := range c.endpoints {
		cli, err := newClient([]string{ep})
		if err != nil {
			all.stop()
			return nil, err
		}
		all.clis = append(all.clis, cli)
		reqCtx := clientv3.WithRequireLeader(ctx)
		for j := range watchersPerMember {
			w := &watcher{cli: cli, now: now, reqCtx: reqCtx, log: watchLog{member: i, id: j, prevKV: j%2 == 0, startRev: 1}}
			all.ws = append(all.ws, w)
			all.wg.Go(func() { w.run(ctx) })
		}
		all.wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(700 * time.Millisecond):
				}
				all.requestProgress(reqCtx, cli)
			}
		})
	}
	return all, nil
}

func (all *watchers) requestProgress(reqCtx context.Context, cli *clientv3.Client) {
	pctx, cancel := context.WithTimeout(reqCtx, time.Second)
	_ = cli.RequestProgress(pctx) // best effort: the stream may be down
	cancel()
}

// catchUp requests progress until every watcher has covered final or d
// has passed; it returns the watchers that did not.
func (all *watchers) catchUp(final int64, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		var behind []string
		for _, w := range all.ws {
			w.mu.Lock()
			if w.covered < final {
				behind = append(behind, fmt.Sprintf("%s at revision %d", w.log.name(), w.covered))
			}
			w.mu.Unlock()
		}
		if len(behind) == 0 || time.Now().After(deadline) {
			return behind
		}
		for i, cli := range all.clis {
			all.requestProgress(all.ws[i*watchersPerMember].reqCtx, cli)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// stop ends every watch and returns the logs.
func (all *watchers) stop() []*watchLog {
	all.cancel()
	all.wg.Wait()
	for _, cli := range all.clis {
		cli.Close()
	}
	var logs []*watchLog
	for _, w := range all.ws {
		logs = append(logs, &w.log)
	}
	return logs
}

// watchStats summarizes a log for the test output.
func watchStats(l *watchLog) string {
	var resps, events, progress, resumes, canceled int
	for _, r := range l.resps {
		switch {
		case r.resume:
			resumes++
		case r.progress:
			progress++
		case r.canceled:
			canceled++
		default:
			resps++
			events += len(r.events)
		}
	}
	return fmt.Sprintf("%s: %d responses, %d events, %d progress notifies, %d cancels, %d resumptions",
		l.name(), resps, events, progress, canceled, resumes)
}

func sameKV(a, b kv) bool { return a == b }

// compactionAt is a compaction request at rev, sent at test clock time at.
type compactionAt struct{ rev, at int64 }

// eventDiff says how a delivered event differs from the history's, or "".
// prevGone says that the event's previous version may have been compacted
// when the server looked it up, which excuses a missing prev_kv (but
// never a wrong one).
func eventDiff(got, want histEvent, prevKV, prevGone bool) string {
	if got.del != want.del {
		return fmt.Sprintf("type differs (history: %s)", want)
	}
	if got.del {
		if got.kv.key != want.kv.key || got.kv.mod != want.kv.mod {
			return fmt.Sprintf("kv %v differs (history: %s)", got.kv, want)
		}
	} else if !sameKV(got.kv, want.kv) {
		return fmt.Sprintf("kv %v differs from the history's %v", got.kv, want.kv)
	}
	if prevKV {
		switch {
		case got.prev == nil && want.prev != nil && prevGone:
		case (got.prev == nil) != (want.prev == nil):
			return fmt.Sprintf("prev kv %v, history's %v", got.prev, want.prev)
		case got.prev != nil && *got.prev != *want.prev:
			return fmt.Sprintf("prev kv %v differs from the history's %v", *got.prev, *want.prev)
		}
	}
	return ""
}

// checkWatch checks one watcher's log against the history's events (in
// revision order), the final revision every watcher must have covered and
// the run's compaction requests.
func checkWatch(l *watchLog, hist []histEvent, final int64, compactions []compactionAt) []string {
	var problems []string
	report := func(format string, args ...any) {
		problems = append(problems, l.name()+": "+fmt.Sprintf(format, args...))
	}
	type evKey struct {
		rev int64
		key string
	}
	index := map[evKey]int{}
	for i, e := range hist {
		index[evKey{e.kv.mod, e.kv.key}] = i
	}
	delivered := make([]bool, len(hist))
	seen := map[evKey]int{}    // event -> response index
	revResp := map[int64]int{} // revision -> response that delivered it first
	nextIdx := sort.Search(len(hist), func(i int) bool { return hist[i].kv.mod >= l.startRev })
	var lastRev, lastProgress, compacted int64
	resumedAt := int64(-1) // >= 0: the last event before a resumption, awaiting the next event
	// prevGone: the previous version of a key changed at rev may have been
	// compacted before a response received at at.
	prevGone := func(rev, at int64) bool {
		if rev <= compacted {
			return true
		}
		for _, c := range compactions {
			if c.rev >= rev && c.at <= at {
				return true
			}
		}
		return false
	}
	// passTo reports undelivered history events with revision < rev.
	passTo := func(rev int64, why string) {
		var missing []string
		for nextIdx < len(hist) && hist[nextIdx].kv.mod < rev {
			if !delivered[nextIdx] {
				missing = append(missing, hist[nextIdx].String())
			}
			nextIdx++
		}
		if len(missing) > 0 {
			report("gap: %s, but never delivered %d earlier event(s): %v", why, len(missing), truncate(missing))
		}
	}
	for ri, r := range l.resps {
		switch {
		case r.resume:
			resumedAt = max(lastRev, compacted-1)
			if want := max(lastRev+1, l.startRev); r.resumeRev < want {
				report("resumed from revision %d, before the last event's revision %d + 1", r.resumeRev, lastRev)
			}
			continue
		case r.canceled:
			if r.compactRev > 0 {
				compacted = max(compacted, r.compactRev)
				// Compacted: the events before compactRev are excused.
				for nextIdx < len(hist) && hist[nextIdx].kv.mod < r.compactRev {
					nextIdx++
				}
			}
			continue
		case r.progress:
			if r.header < lastRev {
				report("progress notify at revision %d (response %d) after an event at revision %d", r.header, ri, lastRev)
			}
			for i := nextIdx; i < len(hist) && hist[i].kv.mod <= r.header; i++ {
				if !delivered[i] {
					report("progress notify at revision %d (response %d) overtook the undelivered event %s", r.header, ri, hist[i])
					break
				}
			}
			lastProgress = max(lastProgress, r.header)
			continue
		}
		if len(r.events) == 0 {
			report("response %d (header revision %d) has no events and is neither a progress notify nor a cancel", ri, r.header)
			continue
		}
		for ei, e := range r.events {
			rev := e.kv.mod
			k := evKey{rev, e.kv.key}
			if prevResp, dup := seen[k]; dup {
				report("duplicate: %s delivered in response %d and again in response %d", e, prevResp, ri)
				continue
			}
			seen[k] = ri
			switch {
			case ei > 0 && rev < r.events[ei-1].kv.mod:
				report("out of order within response %d: %s after revision %d", ri, e, r.events[ei-1].kv.mod)
			case rev < lastRev:
				report("out of order: %s (response %d) after an event at revision %d", e, ri, lastRev)
			}
			if first, ok := revResp[rev]; ok && first != ri {
				report("not atomic: revision %d split across responses %d and %d", rev, first, ri)
			} else if !ok {
				revResp[rev] = ri
			}
			if rev <= lastProgress {
				report("%s (response %d) delivered after a progress notify at revision %d", e, ri, lastProgress)
			}
			i, ok := index[k]
			if !ok {
				report("%s (response %d) is not in the revision history", e, ri)
				lastRev = max(lastRev, rev)
				continue
			}
			if resumedAt >= 0 {
				j := sort.Search(len(hist), func(j int) bool { return hist[j].kv.mod > resumedAt })
				if j < len(hist) && hist[j].kv.mod != rev {
					report("not resumable: after resuming past revision %d the next event is %s, but the history's next is %s", resumedAt, e, hist[j])
				}
				resumedAt = -1
			}
			if d := eventDiff(e, hist[i], l.prevKV, prevGone(rev, r.at)); d != "" {
				report("event %s (response %d): %s", e, ri, d)
			}
			delivered[i] = true
			if rev > lastRev {
				passTo(rev, fmt.Sprintf("delivered %s (response %d)", e, ri))
			}
			lastRev = max(lastRev, rev)
		}
	}
	covered := max(lastRev, lastProgress)
	passTo(covered+1, fmt.Sprintf("covered up to revision %d", covered))
	if covered < final {
		report("covered only up to revision %d of the final %d", covered, final)
	}
	return problems
}

func truncate(s []string) []string {
	if len(s) > 5 {
		return append(s[:5:5], fmt.Sprintf("... %d more", len(s)-5))
	}
	return s
}

// dump writes the log in readable form, for a failed run.
func (l *watchLog) dump(path string) error {
	var b strings.Builder
	for i, r := range l.resps {
		fmt.Fprintf(&b, "%d %.3fs ", i, float64(r.at)/1e9)
		switch {
		case r.resume:
			fmt.Fprintf(&b, "resume from %d\n", r.resumeRev)
		case r.progress:
			fmt.Fprintf(&b, "progress %d\n", r.header)
		default:
			fmt.Fprintf(&b, "header %d canceled=%v compact=%d err=%q events %v\n", r.header, r.canceled, r.compactRev, r.err, r.events)
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
