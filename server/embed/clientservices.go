package embed

import (
	"context"
	"net"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"
)

// ClientServices registers gRPC services that are built on cairn's Go
// client (etcd's Lock and Election services, server/v3client) on gs. dial
// connects to gs in memory. The returned function releases what the
// services hold; it runs after gs has stopped.
type ClientServices func(gs *grpc.Server, dial func(context.Context, string) (net.Conn, error)) (func(), error)

// selfConnBuffer is the size of each direction's buffer of the in-memory
// connection between the services' client and the gRPC server. bufconn
// allocates it whole for every connection; a writer that fills it waits
// for the reader, so 64 KiB (four HTTP/2 frames) costs no more than a
// little throughput of the Lock and Election services, where 1 MiB kept
// 8 MB of every member's heap live (and twice that at the GC's peak).
const selfConnBuffer = 64 << 10

// selfServices are the installed client services and the in-memory
// listener their client reaches the gRPC server through.
type selfServices struct {
	lis     *bufconn.Listener
	served  chan struct{} // closed when the gRPC server stops serving lis
	release func()
}

// startClientServices registers the client services on gs and serves gs on
// an in-memory listener for their client. It must run before gs serves
// anything else: gRPC takes no registrations after that.
func startClientServices(gs *grpc.Server, clientServices ClientServices, lg *zap.Logger) (*selfServices, error) {
	if clientServices == nil {
		lg.Warn("this member serves no Lock and Election services (started without embed.Extensions.ClientServices)")
		return nil, nil
	}
	lis := bufconn.Listen(selfConnBuffer)
	release, err := clientServices(gs, func(ctx context.Context, _ string) (net.Conn, error) {
		return lis.DialContext(ctx)
	})
	if err != nil {
		lis.Close()
		return nil, err
	}
	s := &selfServices{lis: lis, served: make(chan struct{}), release: release}
	go func() {
		defer close(s.served)
		gs.Serve(lis) // returns once gs stops or lis closes
	}()
	return s, nil
}

// close releases the services and the listener; gs has stopped already.
func (s *selfServices) close() {
	if s == nil {
		return
	}
	s.release()
	s.lis.Close()
	<-s.served
}
