package dashboard

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// errNoDialableURL is a member whose client URLs the dashboard cannot dial
// (unix sockets, or https:// without client TLS settings).
var errNoDialableURL = errors.New("no client URL this member can dial")

// errNotPublished is a member that has not published its client URLs
// (not started yet, or this member has not applied its publication).
var errNotPublished = errors.New("no client URLs published yet")

// remotes keeps one gRPC connection per other member, for their Status.
// The caller's token travels with each call, so the other member applies
// its own checks. Tokens are valid on every member (a simple token is
// assigned through raft; a JWT is signed with the cluster's key).
type remotes struct {
	tls *tls.Config

	mu    sync.Mutex
	conns map[uint64]*remoteConn
}

type remoteConn struct {
	urls string // the client URLs it was dialed for, joined
	conn *grpc.ClientConn
}

func newRemotes(tlsCfg *tls.Config) *remotes {
	return &remotes{tls: tlsCfg, conns: map[uint64]*remoteConn{}}
}

// status calls Status on member m.
func (rs *remotes) status(ctx context.Context, m *pb.Member) (*pb.StatusResponse, error) {
	conn, err := rs.conn(m)
	if err != nil {
		return nil, err
	}
	return pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{})
}

// conn returns the connection to m, dialing again when its URLs changed.
func (rs *remotes) conn(m *pb.Member) (*grpc.ClientConn, error) {
	key := strings.Join(m.ClientURLs, ",")
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rc, ok := rs.conns[m.ID]; ok {
		if rc.urls == key {
			return rc.conn, nil
		}
		rc.conn.Close()
		delete(rs.conns, m.ID)
	}
	if len(m.ClientURLs) == 0 {
		return nil, errNotPublished
	}
	u, ok := firstDialable(m.ClientURLs, rs.tls != nil)
	if !ok {
		return nil, errNoDialableURL
	}
	creds := insecure.NewCredentials()
	if u.Scheme == "https" {
		creds = credentials.NewTLS(rs.tls.Clone())
	}
	conn, err := grpc.NewClient(u.Host, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, err
	}
	rs.conns[m.ID] = &remoteConn{urls: key, conn: conn}
	return conn, nil
}

func (rs *remotes) close() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for id, rc := range rs.conns {
		rc.conn.Close()
		delete(rs.conns, id)
	}
}
