package etcdserver

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
)

// fakeSnapshotDisk records what the saver does to raft's log and files.
type fakeSnapshotDisk struct {
	mu      sync.Mutex
	events  []string
	saveErr error
	first   uint64
}

func (d *fakeSnapshotDisk) add(e string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, e)
}

func (d *fakeSnapshotDisk) got() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.events)
}

func (d *fakeSnapshotDisk) FirstIndex() (uint64, error) { return d.first, nil }

func (d *fakeSnapshotDisk) CreateSnapshot(i uint64, cs *raftpb.ConfState, data []byte) (*raftpb.Snapshot, error) {
	d.add("create " + string(data))
	return &raftpb.Snapshot{Data: data}, nil
}

func (d *fakeSnapshotDisk) Compact(i uint64) error {
	d.add("compact")
	return nil
}

func (d *fakeSnapshotDisk) SaveSnap(s *raftpb.Snapshot) error {
	d.add("save " + string(s.Data))
	return d.saveErr
}

func newTestSaver(d *fakeSnapshotDisk, catchUp uint64) (*snapshotSaver, *sync.WaitGroup, *[]error) {
	var wg sync.WaitGroup
	var failures []error
	ss := &snapshotSaver{lg: zap.NewNop(), log: d, files: d, catchUp: catchUp,
		run:  func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() },
		fail: func(err error) { failures = append(failures, err) }}
	return ss, &wg, &failures
}

// TestSnapshotSaverWaitsForTheDurableCommit: nothing is written before the
// backend commit the snapshot relies on is durable; wait returns only
// once it is saved; the next save waits for the previous one.
func TestSnapshotSaverWaitsForTheDurableCommit(t *testing.T) {
	d := &fakeSnapshotDisk{}
	ss, wg, failures := newTestSaver(d, 5)
	durable := make(chan struct{})
	ss.save(100, &raftpb.ConfState{}, []byte("a"), durable)
	if !ss.due(211, 110) || ss.due(210, 110) {
		t.Errorf("due counts from the snapshot being saved (index %d)", ss.index)
	}
	time.Sleep(10 * time.Millisecond) // a saver that did not wait would have written by now
	if got := d.got(); len(got) != 0 {
		t.Fatalf("wrote %v before the commit was durable", got)
	}
	close(durable)
	ss.wait()
	if want := []string{"create a", "save a", "compact"}; !slices.Equal(d.got(), want) {
		t.Fatalf("after wait: %v, want %v", d.got(), want)
	}
	second := make(chan struct{})
	close(second)
	ss.save(200, &raftpb.ConfState{}, []byte("b"), second)
	ss.wait()
	wg.Wait()
	if want := []string{"create a", "save a", "compact", "create b", "save b", "compact"}; !slices.Equal(d.got(), want) {
		t.Fatalf("%v, want %v", d.got(), want)
	}
	if len(*failures) != 0 {
		t.Fatalf("failures: %v", *failures)
	}
}

func TestSnapshotSaverStopsTheMemberWhenTheFileCannotBeSaved(t *testing.T) {
	d := &fakeSnapshotDisk{saveErr: errors.New("EIO")}
	ss, wg, failures := newTestSaver(d, 5)
	durable := make(chan struct{})
	close(durable)
	ss.save(100, &raftpb.ConfState{}, []byte("a"), durable)
	ss.wait()
	wg.Wait()
	if len(*failures) != 1 {
		t.Fatalf("failures %v, want the save error", *failures)
	}
	if slices.Contains(d.got(), "compact") {
		t.Fatal("compacted raft's log although the snapshot was not saved")
	}
}

func TestSnapshotSaverKeepsCatchUpEntries(t *testing.T) {
	for _, tc := range []struct {
		applied, catchUp uint64
		compacts         bool
	}{
		{applied: 100, catchUp: 5, compacts: true},
		{applied: 5, catchUp: 5, compacts: false},
		{applied: 3, catchUp: 5, compacts: false},
	} {
		d := &fakeSnapshotDisk{}
		ss, wg, _ := newTestSaver(d, tc.catchUp)
		durable := make(chan struct{})
		close(durable)
		ss.save(tc.applied, &raftpb.ConfState{}, []byte("a"), durable)
		ss.wait()
		wg.Wait()
		if got := slices.Contains(d.got(), "compact"); got != tc.compacts {
			t.Errorf("applied %d, catch-up %d: compacted %v, want %v", tc.applied, tc.catchUp, got, tc.compacts)
		}
	}
}

func TestSnapshotSaverLogCompacted(t *testing.T) {
	for first, want := range map[uint64]bool{1: false, 2: true} {
		ss, _, _ := newTestSaver(&fakeSnapshotDisk{first: first}, 5)
		if got := ss.logCompacted(); got != want {
			t.Errorf("first index %d: logCompacted %v, want %v", first, got, want)
		}
	}
}
