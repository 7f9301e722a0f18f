package metrics

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// The server-side gRPC metrics etcd exports (the grpc_server_* family with
// its grpc_type, grpc_service, grpc_method and grpc_code labels), kept by
// this package's own interceptors.
var (
	grpcStarted = counterVec("", "", "grpc_server_started_total",
		"RPCs the server has started, by method.", methodLabels...)
	grpcHandled = counterVec("", "", "grpc_server_handled_total",
		"RPCs the server has finished, by method and status code.", handledLabels...)
	grpcMsgReceived = counterVec("", "", "grpc_server_msg_received_total",
		"Messages the server has received, by method.", methodLabels...)
	grpcMsgSent = counterVec("", "", "grpc_server_msg_sent_total",
		"Messages the server has sent, by method.", methodLabels...)
	// Not registered with the others: EnableExtensive registers it.
	grpcHandling = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "grpc_server_handling_seconds",
		Help:    "Time from the start of an RPC to its end as handled by the server, by method.",
		Buckets: grpcBuckets,
	}, methodLabels)

	extensiveOnce sync.Once
	extensive     atomic.Bool
)

var (
	// methodLabels name an RPC method in every grpc_server_* series.
	methodLabels = []string{"grpc_type", "grpc_service", "grpc_method"}
	// handledLabels add the status code the RPC ended with.
	handledLabels = append(slices.Clip(methodLabels), "grpc_code")
)

// EnableExtensive turns on --metrics=extensive: the gRPC handling-time
// histogram is registered and recorded from then on. Call it before
// building gRPC servers.
func EnableExtensive() {
	extensiveOnce.Do(func() {
		prometheus.MustRegister(grpcHandling)
		extensive.Store(true)
	})
}

// Extensive reports whether EnableExtensive was called.
func Extensive() bool { return extensive.Load() }

const numCodes = int(codes.Unauthenticated) + 1

// method holds one RPC method's series, resolved once so that an RPC costs
// a map read and atomic adds.
type method struct {
	started, received, sent prometheus.Counter
	handled                 [numCodes]prometheus.Counter
	handling                prometheus.Observer // nil unless extensive
}

var methods sync.Map // full method name -> *method

func grpcType(clientStream, serverStream bool) string {
	switch {
	case clientStream && serverStream:
		return "bidi_stream"
	case clientStream:
		return "client_stream"
	case serverStream:
		return "server_stream"
	}
	return "unary"
}

func splitMethod(full string) (service, name string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndex(full, "/"); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "unknown", full
}

func newMethod(full, typ string) *method {
	svc, name := splitMethod(full)
	m := &method{
		started:  grpcStarted.WithLabelValues(typ, svc, name),
		received: grpcMsgReceived.WithLabelValues(typ, svc, name),
		sent:     grpcMsgSent.WithLabelValues(typ, svc, name),
	}
	for c := range numCodes {
		m.handled[c] = grpcHandled.WithLabelValues(typ, svc, name, codes.Code(c).String())
	}
	if extensive.Load() {
		m.handling = grpcHandling.WithLabelValues(typ, svc, name)
	}
	return m
}

// InitGRPCServer creates every series of every method registered on gs, at
// zero, as etcd does: a method shows up in a scrape before it is called.
// Call it after the services are registered.
func InitGRPCServer(gs *grpc.Server) {
	for svc, info := range gs.GetServiceInfo() {
		for _, mi := range info.Methods {
			full := "/" + svc + "/" + mi.Name
			if _, ok := methods.Load(full); !ok {
				methods.LoadOrStore(full, newMethod(full, grpcType(mi.IsClientStream, mi.IsServerStream)))
			}
		}
	}
}

func lookup(full, typ string) *method {
	if m, ok := methods.Load(full); ok {
		return m.(*method)
	}
	m, _ := methods.LoadOrStore(full, newMethod(full, typ))
	return m.(*method)
}

func (m *method) done(err error, start time.Time) {
	c := status.Code(err)
	if int(c) < numCodes {
		m.handled[c].Inc()
	}
	if m.handling != nil {
		m.handling.Observe(time.Since(start).Seconds())
	}
}

// UnaryServerInterceptor counts unary RPCs. Put it first in the chain so
// that it sees the status the client gets.
func UnaryServerInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	m := lookup(info.FullMethod, "unary")
	var start time.Time
	if m.handling != nil {
		start = time.Now()
	}
	m.started.Inc()
	countMessage(m.received, ClientGRPCReceivedBytes, req, nil)
	countClientRequest(ctx, "unary")
	resp, err := handler(ctx, req)
	countMessage(m.sent, ClientGRPCSentBytes, resp, err)
	m.done(err, start)
	return resp, err
}

// StreamServerInterceptor counts streaming RPCs and their messages.
func StreamServerInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	m := lookup(info.FullMethod, grpcType(info.IsClientStream, info.IsServerStream))
	var start time.Time
	if m.handling != nil {
		start = time.Now()
	}
	m.started.Inc()
	countClientRequest(ss.Context(), "stream")
	err := handler(srv, &countingStream{ServerStream: ss, m: m})
	m.done(err, start)
	return err
}

type countingStream struct {
	grpc.ServerStream
	m *method
}

func (s *countingStream) SendMsg(msg any) error {
	return countMessage(s.m.sent, ClientGRPCSentBytes, msg, s.ServerStream.SendMsg(msg))
}

func (s *countingStream) RecvMsg(msg any) error {
	return countMessage(s.m.received, ClientGRPCReceivedBytes, msg, s.ServerStream.RecvMsg(msg))
}

// countMessage counts msg in n and its size in bytes unless err says it
// did not go through, and returns err.
func countMessage(n, bytes prometheus.Counter, msg any, err error) error {
	if err == nil {
		n.Inc()
		addPayload(bytes, msg)
	}
	return err
}

// clientAPIVersionKey is the metadata key in which etcd's client announces
// its API version ("3.7").
const clientAPIVersionKey = "client-api-version"

// countClientRequest counts a call by its type and the client's announced
// API version ("unknown" for clients that announce none).
func countClientRequest(ctx context.Context, typ string) {
	// ValueFromIncomingContext reads the one key; FromIncomingContext
	// would copy the whole metadata map on every request. (Every call the
	// interceptors see came through a gRPC transport, which always
	// attaches incoming metadata: etcd's "no metadata, not counted" case
	// cannot happen here.)
	ver := "unknown"
	if vs := metadata.ValueFromIncomingContext(ctx, clientAPIVersionKey); len(vs) > 0 {
		ver = vs[0]
	}
	ClientRequests.WithLabelValues(typ, ver).Inc()
}

// addPayload adds the encoded size of a protobuf message to c.
func addPayload(c prometheus.Counter, msg any) {
	if pm, ok := msg.(proto.Message); ok {
		c.Add(float64(proto.Size(pm)))
	}
}
