package v3rpc

import (
	"go.uber.org/zap"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// allServices is the gRPC health service name that stands for every
// service of the server.
const allServices = ""

// healthNotifier keeps the gRPC health service's status: SERVING, except
// while a defragmentation runs with the StopGRPCServiceOnDefrag feature
// gate, when clients that check health (etcd's client does) should go to
// another member.
type healthNotifier struct {
	hs           *health.Server
	lg           *zap.Logger
	stopOnDefrag bool
}

func newHealthNotifier(hs *health.Server, lg *zap.Logger, stopOnDefrag bool) *healthNotifier {
	hn := &healthNotifier{hs: hs, lg: lg, stopOnDefrag: stopOnDefrag}
	hn.serve()
	return hn
}

// autoDefragWatchable is a MaintenanceServer that also defragments by
// itself (cairn's automatic reclamation) and reports when.
type autoDefragWatchable interface {
	WatchAutoDefrags(w interface {
		DefragStarted()
		DefragFinished()
	})
}

// DefragStarted and DefragFinished let the member report the defrags it
// starts by itself.
func (hn *healthNotifier) DefragStarted()  { hn.defragStarted() }
func (hn *healthNotifier) DefragFinished() { hn.defragFinished() }

func (hn *healthNotifier) defragStarted() {
	if !hn.stopOnDefrag {
		return
	}
	hn.lg.Warn("grpc service status changed", zap.String("service", allServices),
		zap.String("status", healthpb.HealthCheckResponse_NOT_SERVING.String()), zap.String("reason", "defrag is active"))
	hn.hs.SetServingStatus(allServices, healthpb.HealthCheckResponse_NOT_SERVING)
}

func (hn *healthNotifier) defragFinished() {
	if hn.stopOnDefrag {
		hn.serve()
	}
}

func (hn *healthNotifier) serve() {
	hn.lg.Info("grpc service status changed", zap.String("service", allServices),
		zap.String("status", healthpb.HealthCheckResponse_SERVING.String()))
	hn.hs.SetServingStatus(allServices, healthpb.HealthCheckResponse_SERVING)
}
