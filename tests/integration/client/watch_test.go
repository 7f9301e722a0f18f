package client_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cairnkv/cairn/client"
)

// next receives the next watch response.
func next(t *testing.T, wc client.WatchChan) client.WatchResponse {
	t.Helper()
	select {
	case wr, ok := <-wc:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return wr
	case <-time.After(15 * time.Second):
		t.Fatal("no watch response")
	}
	return client.WatchResponse{}
}

// collect receives events until it has n.
func collect(t *testing.T, wc client.WatchChan, n int) []*client.Event {
	t.Helper()
	var evs []*client.Event
	for len(evs) < n {
		wr := next(t, wc)
		if err := wr.Err(); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, wr.Events...)
	}
	return evs
}

func TestWatch(t *testing.T) {
	c, ctx := newMemberClient(t)
	wc := c.Watch(ctx, "w/", client.WithPrefix(), client.WithPrevKV(), client.WithCreatedNotify())
	if wr := next(t, wc); !wr.Created {
		t.Fatalf("first response %+v, want created", wr)
	}
	must(c.Put(ctx, "w/a", "1"))
	must(c.Put(ctx, "other", "x"))
	must(c.Put(ctx, "w/a", "2"))
	must(c.Delete(ctx, "w/a"))
	evs := collect(t, wc, 3)
	if !evs[0].IsCreate() || !evs[1].IsModify() || evs[2].Type != client.EventTypeDelete {
		t.Errorf("events %v", evs)
	}
	if evs[1].PrevKv == nil || string(evs[1].PrevKv.Value) != "1" {
		t.Errorf("prev kv %v", evs[1].PrevKv)
	}
}

func TestWatchFromRevisionAndFilters(t *testing.T) {
	c, ctx := newMemberClient(t)
	first := must(c.Put(ctx, "k", "1")).Header.Revision
	must(c.Put(ctx, "k", "2"))
	must(c.Delete(ctx, "k"))
	evs := collect(t, c.Watch(ctx, "k", client.WithRev(first)), 3)
	if evs[0].Kv.ModRevision != first || evs[2].Type != client.EventTypeDelete {
		t.Errorf("history %v", evs)
	}
	puts := collect(t, c.Watch(ctx, "k", client.WithRev(first), client.WithFilterDelete()), 2)
	if puts[0].Type != client.EventTypePut || puts[1].Type != client.EventTypePut {
		t.Errorf("filtered %v", puts)
	}
	dels := collect(t, c.Watch(ctx, "k", client.WithRev(first), client.WithFilterPut()), 1)
	if dels[0].Type != client.EventTypeDelete {
		t.Errorf("filtered %v", dels)
	}
}

func TestWatchCompacted(t *testing.T) {
	c, ctx := newMemberClient(t)
	first := must(c.Put(ctx, "k", "1")).Header.Revision
	last := must(c.Put(ctx, "k", "2")).Header.Revision
	must(c.Compact(ctx, last))
	wc := c.Watch(ctx, "k", client.WithRev(first))
	wr := next(t, wc)
	if !wr.Canceled || wr.CompactRevision != last || !errors.Is(wr.Err(), rpctypes.ErrCompacted) {
		t.Errorf("watch of a compacted revision: %+v, err %v", wr, wr.Err())
	}
	if _, ok := <-wc; ok {
		t.Error("channel open after cancel")
	}
}

func TestWatchRequestProgress(t *testing.T) {
	c, ctx := newMemberClient(t)
	rev := must(c.Put(ctx, "k", "v")).Header.Revision
	wc := c.Watch(ctx, "k", client.WithCreatedNotify())
	next(t, wc)
	if err := c.RequestProgress(ctx); err != nil {
		t.Fatal(err)
	}
	wr := next(t, wc)
	if !wr.IsProgressNotify() || wr.Header.Revision != rev {
		t.Errorf("progress %+v, want a notify at %d", wr, rev)
	}
}

func TestWatchEndsWithContextAndClose(t *testing.T) {
	c := newClient(t, startMember(t).Endpoint())
	ctx, cancel := context.WithCancel(testCtx(t))
	wc := c.Watch(ctx, "k")
	cancel()
	for range wc {
	}
	wc = c.Watch(context.Background(), "k", client.WithCreatedNotify())
	next(t, wc)
	c.Close()
	for range wc {
	}
	if _, ok := <-c.Watch(context.Background(), "k"); ok {
		t.Error("watch on a closed client delivered a response")
	}
}

// TestWatchResumesAfterRestart watches on one member of three, writes while
// it is down and checks that after its restart the watch delivers every
// event exactly once, in order.
func TestWatchResumesAfterRestart(t *testing.T) {
	ms := startCluster(t, 3)
	watching := newClient(t, ms[0].Endpoint())
	writing := newClient(t, ms[1].Endpoint(), ms[2].Endpoint())
	ctx := testCtx(t)
	// The watcher must exist before the first put, or it starts after it.
	wc := watching.Watch(ctx, "r/", client.WithPrefix(), client.WithCreatedNotify())
	next(t, wc)
	const perPhase = 5
	put := func(phase int) {
		for i := range perPhase {
			must(writing.Put(ctx, fmt.Sprintf("r/%d-%d", phase, i), "v"))
		}
	}
	put(0)
	evs := collect(t, wc, perPhase)
	stopMember(t, ms[0])
	put(1)
	restartMember(t, ms[0])
	put(2)
	evs = append(evs, collect(t, wc, 2*perPhase)...)
	if len(evs) != 3*perPhase {
		t.Fatalf("%d events, want %d", len(evs), 3*perPhase)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Kv.ModRevision != evs[i-1].Kv.ModRevision+1 {
			t.Fatalf("event %d at revision %d follows %d", i, evs[i].Kv.ModRevision, evs[i-1].Kv.ModRevision)
		}
	}
	select {
	case wr := <-wc:
		t.Errorf("extra response %+v", wr)
	case <-time.After(200 * time.Millisecond):
	}
}
