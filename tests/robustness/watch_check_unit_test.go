package robustness

import (
	"strings"
	"testing"
)

// Unit tests of checkWatch on hand-made sequences.

func hPut(key, value string, rev, create, version int64) histEvent {
	return histEvent{kv: kv{key: key, value: value, createRev: create, mod: rev, version: version}}
}

func hDel(key string, rev int64) histEvent {
	return histEvent{del: true, kv: kv{key: key, mod: rev}}
}

// testHistory: revisions 2..6; revision 4 is a two-event revision.
var testHistory = []histEvent{
	hPut("key/0", "a", 2, 2, 1),
	hPut("key/1", "b", 3, 3, 1),
	hPut("key/0", "c", 4, 2, 2),
	hPut("key/2", "d", 4, 4, 1),
	hDel("key/1", 5),
	hPut("key/1", "e", 6, 6, 1),
}

func evs(idx ...int) watchResp {
	r := watchResp{}
	for _, i := range idx {
		r.events = append(r.events, testHistory[i])
	}
	r.header = r.events[len(r.events)-1].kv.mod
	return r
}

func progressAt(rev int64) watchResp { return watchResp{progress: true, header: rev} }

func resumeAt(rev int64) watchResp { return watchResp{resume: true, resumeRev: rev} }

// matchProblem is the check the watch-check tables share: with want empty
// there must be no problem; otherwise one problem must contain want, and
// that problem is returned for further checks.
func matchProblem(t *testing.T, problems []string, want string) string {
	t.Helper()
	if want == "" {
		if len(problems) > 0 {
			t.Fatalf("unexpected problems: %q", problems)
		}
		return ""
	}
	for _, p := range problems {
		if strings.Contains(p, want) {
			return p
		}
	}
	t.Fatalf("no problem containing %q in %q", want, problems)
	return ""
}

func TestCheckWatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		resps []watchResp
		want  string // substring of a problem; "" means no problem
	}{
		{"ok", []watchResp{evs(0), evs(1), evs(2, 3), progressAt(4), evs(4, 5), progressAt(7)}, ""},
		{"ok with resumption", []watchResp{evs(0, 1), resumeAt(4), evs(2, 3), evs(4), resumeAt(6), evs(5)}, ""},
		{"gap", []watchResp{evs(0), evs(2, 3), evs(4), evs(5)}, "gap"},
		{"gap at the end", []watchResp{evs(0), evs(1), evs(2, 3), evs(4), progressAt(6)}, "overtook"},
		{"not caught up", []watchResp{evs(0), evs(1), evs(2, 3), evs(4)}, "covered only up to revision 5"},
		{"duplicate", []watchResp{evs(0), evs(1), evs(1), evs(2, 3), evs(4), evs(5)}, "duplicate"},
		{"duplicate after resumption", []watchResp{evs(0), evs(1), resumeAt(3), evs(1), evs(2, 3), evs(4), evs(5)}, "duplicate"},
		{"out of order", []watchResp{evs(0), evs(2, 3), evs(1), evs(4), evs(5)}, "out of order"},
		{"out of order within a response", []watchResp{evs(0), evs(2, 3, 1), evs(4), evs(5)}, "out of order within"},
		{"split revision", []watchResp{evs(0), evs(1), evs(2), evs(3), evs(4), evs(5)}, "not atomic: revision 4 split"},
		{"progress overtaking", []watchResp{evs(0), progressAt(3), evs(1), evs(2, 3), evs(4), evs(5)}, "overtook the undelivered event"},
		{"event after progress", []watchResp{evs(0), evs(1), evs(2, 3), progressAt(5), evs(4), evs(5)}, "after a progress notify at revision 5"},
		{"progress behind events", []watchResp{evs(0), evs(1), progressAt(2), evs(2, 3), evs(4), evs(5)}, "progress notify at revision 2 (response 2) after an event at revision 3"},
		{"not resumable", []watchResp{evs(0), evs(1), resumeAt(4), evs(4), evs(5)}, "not resumable"},
		{"phantom", []watchResp{evs(0), evs(1), {events: []histEvent{hPut("key/9", "x", 3, 3, 1)}}, evs(2, 3), evs(4), evs(5)}, "not in the revision history"},
		{"wrong value", []watchResp{evs(0), {events: []histEvent{hPut("key/1", "zz", 3, 3, 1)}}, evs(2, 3), evs(4), evs(5)}, "differs"},
		{"compaction excuses", []watchResp{evs(0), {canceled: true, compactRev: 4}, resumeAt(4), evs(2, 3), evs(4), evs(5)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &watchLog{member: 1, id: 0, startRev: 1, resps: tc.resps}
			p := matchProblem(t, checkWatch(l, testHistory, 6, nil), tc.want)
			if tc.want != "" && !strings.HasPrefix(p, "m1 watcher 0: ") {
				t.Errorf("problem does not name the watcher: %q", p)
			}
		})
	}
}

// prevHistory: revisions 2..6 with prev values, as deriveRevLog makes them.
var prevHistory = func() []histEvent {
	a := hPut("key/0", "a", 2, 2, 1)
	b := hPut("key/0", "b", 3, 2, 2)
	b.prev = &a.kv
	c := hPut("key/1", "c", 4, 4, 1)
	d := hDel("key/0", 5)
	d.prev = &b.kv
	e := hPut("key/0", "e", 6, 6, 1)
	return []histEvent{a, b, c, d, e}
}()

// pevs is a response at test clock at with prevHistory's events idx.
func pevs(at int64, idx ...int) watchResp {
	r := watchResp{at: at}
	for _, i := range idx {
		r.events = append(r.events, prevHistory[i])
	}
	r.header = r.events[len(r.events)-1].kv.mod
	return r
}

// noPrev drops the prev kv of event i of r (a copy).
func noPrev(r watchResp, i int) watchResp {
	r.events = append([]histEvent(nil), r.events...)
	r.events[i].prev = nil
	return r
}

// TestCheckWatchPrevKV: a missing prev_kv is excused only where the
// previous version may have been compacted, as etcd leaves it out there.
// The "resumed at the compact revision" case is the soak's round 8 (seed
// 1796162917304901900): m1's watcher, behind after a power cut, was
// canceled with compact revision 875 and resumed there; the event at 875
// overwrote key/1@870, which the compaction at 875 had removed.
func TestCheckWatchPrevKV(t *testing.T) {
	wrongPrev := pevs(20, 1)
	wrongPrev.events = []histEvent{prevHistory[1]}
	wrongPrev.events[0].prev = &kv{key: "key/0", value: "zz", createRev: 2, mod: 2, version: 1}
	prevOnCreate := pevs(30, 2)
	prevOnCreate.events = []histEvent{prevHistory[2]}
	prevOnCreate.events[0].prev = &prevHistory[0].kv
	for _, tc := range []struct {
		name        string
		resps       []watchResp
		compactions []compactionAt
		want        string // substring of a problem; "" means no problem
	}{
		{"all there", []watchResp{pevs(10, 0), pevs(20, 1), pevs(30, 2), pevs(40, 3, 4)}, nil, ""},
		{"missing", []watchResp{pevs(10, 0), noPrev(pevs(20, 1), 0), pevs(30, 2), pevs(40, 3, 4)}, nil, "prev kv <nil>"},
		{"missing on a delete", []watchResp{pevs(10, 0, 1, 2), noPrev(pevs(40, 3, 4), 0)}, nil, "prev kv <nil>"},
		{"resumed at the compact revision", []watchResp{pevs(10, 0), {at: 20, canceled: true, compactRev: 3}, resumeAt(3),
			noPrev(pevs(30, 1, 2), 0), pevs(40, 3, 4)}, nil, ""},
		{"missing above the compact revision", []watchResp{pevs(10, 0), {at: 20, canceled: true, compactRev: 3}, resumeAt(3),
			noPrev(pevs(30, 1, 2), 0), noPrev(pevs(40, 3, 4), 0)}, nil, "event delete \"key/0\"@5 (response 4): prev kv <nil>"},
		{"compaction sent before the event", []watchResp{pevs(10, 0, 1, 2), noPrev(pevs(40, 3, 4), 0)},
			[]compactionAt{{rev: 5, at: 35}}, ""},
		{"compaction at a later revision", []watchResp{pevs(10, 0), noPrev(pevs(20, 1), 0), pevs(30, 2), pevs(40, 3, 4)},
			[]compactionAt{{rev: 6, at: 15}}, ""},
		{"compaction sent after the event", []watchResp{pevs(10, 0, 1, 2), noPrev(pevs(40, 3, 4), 0)},
			[]compactionAt{{rev: 5, at: 45}}, "prev kv <nil>"},
		{"compaction below the event", []watchResp{pevs(10, 0, 1, 2), noPrev(pevs(40, 3, 4), 0)},
			[]compactionAt{{rev: 4, at: 35}}, "prev kv <nil>"},
		{"wrong even after a compaction", []watchResp{pevs(10, 0), wrongPrev, pevs(30, 2), pevs(40, 3, 4)},
			[]compactionAt{{rev: 6, at: 5}}, "differs from the history's"},
		{"prev kv on a create", []watchResp{pevs(10, 0, 1), prevOnCreate, pevs(40, 3, 4)},
			[]compactionAt{{rev: 6, at: 5}}, "prev kv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &watchLog{member: 1, id: 0, prevKV: true, startRev: 1, resps: tc.resps}
			matchProblem(t, checkWatch(l, prevHistory, 6, tc.compactions), tc.want)
		})
	}
}
