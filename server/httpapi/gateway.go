package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.etcd.io/etcd/api/v3/etcdserverpb/gw"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/protojson"
)

// Path prefixes of the JSON gateway. /v3beta/ is the older name etcd still
// accepts; it is served as /v3/.
const (
	PathGateway     = "/v3/"
	PathGatewayBeta = "/v3beta/"
)

// gatewayConnBuffer is the size of each direction's buffer of the in-memory
// connection between the gateway and the gRPC server (see selfConnBuffer
// in embed: allocated whole per connection, so kept small).
const gatewayConnBuffer = 64 << 10

// gatewayTarget names the in-memory connection; the dialer ignores it.
const gatewayTarget = "passthrough:///cairn-gateway"

// gatewayServices are the etcd services the gateway translates, as etcd's
// gateway registers them. A service the gRPC server lacks answers with
// gRPC's Unimplemented status.
var gatewayServices = []func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error{
	gw.RegisterKVHandler,
	gw.RegisterWatchHandler,
	gw.RegisterLeaseHandler,
	gw.RegisterClusterHandler,
	gw.RegisterMaintenanceHandler,
	gw.RegisterAuthHandler,
	registerLockHandlers,
	registerElectionHandlers,
}

// Gateway is etcd's HTTP/JSON gateway: POST /v3/kv/range and friends,
// translated to gRPC calls on the member's own gRPC server.
//
// The gateway does not dial the client URL as etcd does. It serves the
// gRPC server on an extra in-memory listener and keeps one client
// connection to it, so the calls go through the same interceptors and
// limits as any client's, yet do not depend on how the client URLs are
// bound (0.0.0.0, unix sockets, TLS) and use no port or socket.
//
// The JSON is etcd's: proto field names, int64 as strings, bytes in base64,
// unset fields left out, unknown request fields ignored. Streams (watch,
// lease keepalive, snapshot) answer with one {"result":...} object per line;
// failures answer with {"code":...,"message":...} and the HTTP status that
// grpc-gateway maps the gRPC code to.
type Gateway struct {
	mux    *runtime.ServeMux
	lis    *bufconn.Listener
	conn   *grpc.ClientConn
	served chan struct{} // closed when the gRPC server stops serving lis
}

// NewGateway starts serving srv on an in-memory listener and returns the
// gateway in front of it. Close releases it; srv is stopped by its owner.
func NewGateway(srv *grpc.Server) (*Gateway, error) {
	g := &Gateway{lis: bufconn.Listen(gatewayConnBuffer), served: make(chan struct{})}
	go func() {
		defer close(g.served)
		srv.Serve(g.lis) // returns once srv stops or lis closes
	}()
	if err := g.connect(); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// connect opens the client connection and registers the services on it.
func (g *Gateway) connect() error {
	conn, err := grpc.NewClient(gatewayTarget,
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return g.lis.DialContext(ctx)
		}),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)))
	if err != nil {
		return err
	}
	g.conn = conn
	g.mux = newGatewayMux()
	for _, register := range gatewayServices {
		if err := register(context.Background(), g.mux, conn); err != nil {
			return err
		}
	}
	return nil
}

// newGatewayMux returns grpc-gateway's router with etcd's JSON options for
// every content type and the Authorization header passed on as the token.
func newGatewayMux() *runtime.ServeMux {
	marshaler := &runtime.HTTPBodyMarshaler{Marshaler: &compactJSONPb{runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: true},
	}}}
	return runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, marshaler),
		runtime.WithMetadata(tokenMetadata),
	)
}

// compactJSONPb writes protojson's output without insignificant spaces.
// protojson deliberately varies its spacing from one build to another (so
// that nobody depends on its bytes), but scripts fed by curl do: etcd's
// answers are compact, so cairn's are too.
type compactJSONPb struct{ runtime.JSONPb }

func (m *compactJSONPb) Marshal(v any) ([]byte, error) {
	b, err := m.JSONPb.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// NewEncoder writes compact values, each followed by the delimiter, as
// JSONPb's encoder does.
func (m *compactJSONPb) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := m.Marshal(v)
		if err == nil {
			_, err = w.Write(append(b, m.Delimiter()...))
		}
		return err
	})
}

// tokenMetadata passes an Authorization header on as the "token" metadata
// etcd's gRPC clients send (grpc-gateway itself also forwards it as
// "authorization"). A "Bearer " prefix is dropped, as etcd drops it.
func tokenMetadata(_ context.Context, r *http.Request) metadata.MD {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return nil
	}
	return metadata.Pairs(rpctypes.TokenFieldNameGRPC, strings.TrimPrefix(auth, "Bearer "))
}

// ServeHTTP serves a request under /v3/ or /v3beta/.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, PathGatewayBeta); ok {
		r = withPath(r, PathGateway+rest)
	}
	// Bidirectional streams (watch, lease keepalive) read requests while
	// answering; HTTP/1.1 servers only allow that in full-duplex mode.
	// Writers that cannot do it (HTTP/2, recorders) keep their behaviour.
	_ = http.NewResponseController(w).EnableFullDuplex()
	g.mux.ServeHTTP(w, r)
}

// withPath returns a shallow copy of r with another URL path.
func withPath(r *http.Request, path string) *http.Request {
	u := *r.URL
	u.Path, u.RawPath = path, ""
	r2 := r.Clone(r.Context())
	r2.URL = &u
	return r2
}

// ClientConn is the gateway's connection to the gRPC server, for other
// handlers that call the member on a caller's behalf (the dashboard).
func (g *Gateway) ClientConn() *grpc.ClientConn { return g.conn }

// Close closes the client connection and the in-memory listener and waits
// until the gRPC server no longer serves it. Calls in flight fail.
func (g *Gateway) Close() error {
	var err error
	if g.conn != nil {
		err = g.conn.Close()
	}
	g.lis.Close()
	<-g.served
	return err
}

// WithGateway serves the gateway's paths (/v3/, /v3beta/) with g and every
// other path with h.
func WithGateway(g *Gateway, h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(PathGateway, g)
	mux.Handle(PathGatewayBeta, g)
	mux.Handle("/", h)
	return mux
}
