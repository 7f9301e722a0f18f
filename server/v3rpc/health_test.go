package v3rpc

import (
	"context"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestHealthDuringDefrag: with StopGRPCServiceOnDefrag the gRPC health
// service answers NOT_SERVING while a defragmentation runs, SERVING before
// and after; without the gate it stays SERVING.
func TestHealthDuringDefrag(t *testing.T) {
	for _, gate := range []bool{false, true} {
		f := newFakeServer()
		f.defragEntered, f.defragRelease = make(chan struct{}), make(chan struct{})
		c := serveFake(t, f, Config{StopGRPCServiceOnDefrag: gate})
		hc := healthpb.NewHealthClient(c.conn)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		status := func() healthpb.HealthCheckResponse_ServingStatus {
			t.Helper()
			r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				t.Fatal(err)
			}
			return r.GetStatus()
		}
		if s := status(); s != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("gate %v: before defrag %v", gate, s)
		}
		done := make(chan error, 1)
		go func() { _, err := c.maint.Defragment(ctx, &pb.DefragmentRequest{}); done <- err }()
		<-f.defragEntered
		want := healthpb.HealthCheckResponse_SERVING
		if gate {
			want = healthpb.HealthCheckResponse_NOT_SERVING
		}
		if s := status(); s != want {
			t.Fatalf("gate %v: during defrag %v, want %v", gate, s, want)
		}
		close(f.defragRelease)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if s := status(); s != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("gate %v: after defrag %v", gate, s)
		}
	}
}

// autoDefragger is a MaintenanceServer that defragments by itself, as
// cairn's member does; the test plays its automatic defrag.
type autoDefragger struct {
	*fakeServer
	watchers []interface {
		DefragStarted()
		DefragFinished()
	}
}

func (a *autoDefragger) WatchAutoDefrags(w interface {
	DefragStarted()
	DefragFinished()
}) {
	a.watchers = append(a.watchers, w)
}

// TestHealthDuringAutomaticDefrag: StopGRPCServiceOnDefrag also covers a
// defrag the member starts by itself.
func TestHealthDuringAutomaticDefrag(t *testing.T) {
	a := &autoDefragger{fakeServer: newFakeServer()}
	c := serveFake(t, a.fakeServer, Config{StopGRPCServiceOnDefrag: true, Maintenance: a})
	if len(a.watchers) != 1 {
		t.Fatalf("%d watchers of automatic defrags registered, want 1", len(a.watchers))
	}
	hc := healthpb.NewHealthClient(c.conn)
	status := func() healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetStatus()
	}
	a.watchers[0].DefragStarted()
	if s := status(); s != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("during an automatic defrag: %v", s)
	}
	a.watchers[0].DefragFinished()
	if s := status(); s != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("after an automatic defrag: %v", s)
	}
}
