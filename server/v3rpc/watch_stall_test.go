package v3rpc

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// writeDeadline bounds the puts of TestWatchStalledStreamBlocksNoOne. It is
// far above what they need when nothing blocks them: the test is about
// progress, not speed.
const writeDeadline = 30 * time.Second

// TestWatchStalledStreamBlocksNoOne is etcd issue 17529's shape: a stream
// with many prevKV watchers on a busy range whose client stops reading, so
// HTTP/2 flow control fills and the server's send blocks. Writers must keep
// completing, and watchers on other streams (one on the stalled stream's
// connection, one on another) must receive every event, in order, while the
// stall lasts. Once the client reads again, every stalled watcher must get
// every event too: catching up loses nothing.
func TestWatchStalledStreamBlocksNoOne(t *testing.T) {
	const stalledWatchers, puts, valueSize = 64, 300, 4 << 10
	f, other := newWatchFake(t, Config{})
	// A fixed window (no BDP growth) lets the stalled client buffer only
	// 64 KiB, so the server's sends on that stream block soon and stay
	// blocked: every stalled watcher is then behind, deterministically.
	shared, err := grpc.NewClient(other.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.Close() })

	stalled := openStalledWatch(t, shared, stalledWatchers)
	readers := []*testWatch{openWatch(t, shared), openWatch(t, other)}
	readerIDs := make([]int64, len(readers))
	for i, r := range readers {
		readerIDs[i] = r.create(&pb.WatchCreateRequest{Key: []byte("k/"), RangeEnd: []byte("k0"), PrevKv: true})
	}

	first := f.kv.Rev() + 1
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		value := strings.Repeat("v", valueSize)
		for i := 0; i < puts; i++ {
			f.put(fmt.Sprintf("k/%d", i%8), value)
		}
	}()
	select {
	case <-wrote:
	case <-time.After(writeDeadline):
		t.Fatalf("%d puts not done within %v while a watch stream is stalled", puts, writeDeadline)
	}
	for i, r := range readers {
		checkEventsInOrder(t, fmt.Sprintf("reader %d", i), r.collect(readerIDs[i], puts), first)
	}

	// The stall must have happened, or the test proved nothing: watchers of
	// the stalled stream are behind (victims or unsynced) while the readers,
	// having everything, are not. Not all of them need be: each response
	// the blocked stream still manages to send frees a channel slot, and
	// one slot can take a watcher's whole catch-up. The window lets only a
	// few (about 20) responses of 8 KiB through, far fewer than 64.
	slow, _ := f.kv.WatchBacklog()
	if slow == 0 {
		t.Fatalf("no slow watcher after the puts: the stream with %d watchers did not stall", stalledWatchers)
	}
	t.Logf("%d of the %d stalled watchers behind after the puts", slow, stalledWatchers)

	stalled.resume(t, first, puts)
}

// stalledWatch is a raw Watch stream whose client reads nothing after its
// watchers are created, until resume.
type stalledWatch struct {
	stream pb.Watch_WatchClient
	cancel context.CancelFunc // ends the stream
	ids    []int64
}

func openStalledWatch(t *testing.T, conn *grpc.ClientConn, watchers int) *stalledWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := pb.NewWatchClient(conn).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sw := &stalledWatch{stream: stream, cancel: cancel}
	for i := 0; i < watchers; i++ {
		if err := stream.Send(createReq(&pb.WatchCreateRequest{Key: []byte("k/"), RangeEnd: []byte("k0"), PrevKv: true})); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil || !resp.Created || resp.Canceled {
			t.Fatalf("create stalled watcher %d: %v, %v", i, resp, err)
		}
		sw.ids = append(sw.ids, resp.WatchId)
	}
	return sw
}

// resume reads the stalled stream again and checks that each of its
// watchers receives the puts events from revision first on, in order.
func (sw *stalledWatch) resume(t *testing.T, first int64, puts int) {
	t.Helper()
	got := make(map[int64][]int64, len(sw.ids))
	complete := 0
	// A catch-up that never finishes ends the stream, and Recv fails.
	timer := time.AfterFunc(writeDeadline, sw.cancel)
	defer timer.Stop()
	for complete < len(sw.ids) {
		resp, err := sw.stream.Recv()
		if err != nil {
			t.Fatalf("stalled stream after resume: %v (%d of %d watchers complete)", err, complete, len(sw.ids))
		}
		if resp.CompactRevision != 0 || resp.Canceled {
			t.Fatalf("stalled watcher %d: %v", resp.WatchId, resp)
		}
		before := len(got[resp.WatchId])
		for _, ev := range resp.Events {
			got[resp.WatchId] = append(got[resp.WatchId], ev.Kv.ModRevision)
		}
		if before < puts && len(got[resp.WatchId]) >= puts {
			complete++
		}
	}
	for _, id := range sw.ids {
		revs := got[id]
		if len(revs) != puts {
			t.Fatalf("stalled watcher %d got %d events, want %d", id, len(revs), puts)
		}
		for i, rev := range revs {
			if rev != first+int64(i) {
				t.Fatalf("stalled watcher %d: event %d at revision %d, want %d", id, i, rev, first+int64(i))
			}
		}
	}
}

// checkEventsInOrder: evs are the puts of the test from revision first on,
// one per revision, each with the previous value from the ninth on.
func checkEventsInOrder(t *testing.T, who string, evs []*mvccpb.Event, first int64) {
	t.Helper()
	for i, ev := range evs {
		wantKey := fmt.Sprintf("k/%d", i%8)
		if ev.Type != mvccpb.Event_PUT || ev.Kv.ModRevision != first+int64(i) || string(ev.Kv.Key) != wantKey {
			t.Fatalf("%s: event %d is %s %s@%d, want PUT %s@%d", who, i, ev.Type, ev.Kv.Key, ev.Kv.ModRevision, wantKey, first+int64(i))
		}
		if i >= 8 && ev.PrevKv == nil {
			t.Fatalf("%s: event %d has no previous value", who, i)
		}
	}
}
