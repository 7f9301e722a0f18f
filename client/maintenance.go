package client

import (
	"context"
	"io"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver/manual"
)

// Maintenance inspects and maintains members. Calls that take an endpoint
// go to that member over a connection of their own.
type Maintenance interface {
	AlarmList(ctx context.Context) (*AlarmResponse, error)
	AlarmDisarm(ctx context.Context, m *AlarmMember) (*AlarmResponse, error)
	Status(ctx context.Context, endpoint string) (*StatusResponse, error)
	HashKV(ctx context.Context, endpoint string, rev int64) (*HashKVResponse, error)
	Defragment(ctx context.Context, endpoint string) (*DefragmentResponse, error)
	// Snapshot streams the backend of the member that serves the call; close
	// the reader when done.
	Snapshot(ctx context.Context) (io.ReadCloser, error)
	// MoveLeader hands leadership to transfereeID; send it to the leader.
	MoveLeader(ctx context.Context, transfereeID uint64) (*MoveLeaderResponse, error)
}

type maintenance struct {
	c      *Client
	remote pb.MaintenanceClient
}

// NewMaintenance returns the Maintenance API of c.
func NewMaintenance(c *Client) Maintenance { return newMaintenance(c) }

func newMaintenance(c *Client) *maintenance {
	return &maintenance{c: c, remote: pb.NewMaintenanceClient(c.conn)}
}

func (m *maintenance) AlarmList(ctx context.Context) (*AlarmResponse, error) {
	return call(ctx, m.remote.Alarm, &pb.AlarmRequest{Action: pb.AlarmRequest_GET})
}

func (m *maintenance) AlarmDisarm(ctx context.Context, am *AlarmMember) (*AlarmResponse, error) {
	req := &pb.AlarmRequest{Action: pb.AlarmRequest_DEACTIVATE, MemberID: am.MemberID, Alarm: am.Alarm}
	return call(ctx, m.remote.Alarm, req)
}

func (m *maintenance) Status(ctx context.Context, endpoint string) (*StatusResponse, error) {
	r, err := onEndpoint(m.c, endpoint, func(mc pb.MaintenanceClient) (*StatusResponse, error) {
		return mc.Status(ctx, &pb.StatusRequest{})
	})
	return r, toErr(ctx, err)
}

func (m *maintenance) HashKV(ctx context.Context, endpoint string, rev int64) (*HashKVResponse, error) {
	r, err := onEndpoint(m.c, endpoint, func(mc pb.MaintenanceClient) (*HashKVResponse, error) {
		return mc.HashKV(ctx, &pb.HashKVRequest{Revision: rev})
	})
	return r, toErr(ctx, err)
}

func (m *maintenance) Defragment(ctx context.Context, endpoint string) (*DefragmentResponse, error) {
	r, err := onEndpoint(m.c, endpoint, func(mc pb.MaintenanceClient) (*DefragmentResponse, error) {
		return mc.Defragment(ctx, &pb.DefragmentRequest{})
	})
	return r, toErr(ctx, err)
}

func (m *maintenance) MoveLeader(ctx context.Context, transfereeID uint64) (*MoveLeaderResponse, error) {
	return call(ctx, m.remote.MoveLeader, &pb.MoveLeaderRequest{TargetID: transfereeID})
}

func (m *maintenance) Snapshot(ctx context.Context) (io.ReadCloser, error) {
	sctx, cancel := context.WithCancel(ctx)
	stream, err := m.remote.Snapshot(sctx, &pb.SnapshotRequest{})
	if err != nil {
		cancel()
		return nil, toErr(ctx, err)
	}
	return &snapshotReader{ctx: ctx, stream: stream, cancel: cancel}, nil
}

// snapshotReader reads the blobs of a Snapshot stream in order.
type snapshotReader struct {
	ctx    context.Context
	stream pb.Maintenance_SnapshotClient
	cancel context.CancelFunc
	buf    []byte
	err    error
}

func (s *snapshotReader) Read(p []byte) (int, error) {
	for len(s.buf) == 0 && s.err == nil {
		r, err := s.stream.Recv()
		if err == io.EOF {
			s.err = io.EOF
		} else if err != nil {
			s.err = toErr(s.ctx, err)
		} else {
			s.buf = r.Blob
		}
	}
	if len(s.buf) == 0 {
		return 0, s.err
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

func (s *snapshotReader) Close() error {
	s.cancel()
	return nil
}

// onEndpoint makes call against one endpoint, over a connection of its
// own.
func onEndpoint[R any](c *Client, raw string, call func(pb.MaintenanceClient) (R, error)) (R, error) {
	conn, err := c.dialEndpoint(raw)
	if err != nil {
		var zero R
		return zero, err
	}
	defer conn.Close()
	return call(pb.NewMaintenanceClient(conn))
}

// dialEndpoint opens a conn to one endpoint, with the client's options
// (retries included).
func (c *Client) dialEndpoint(raw string) (*grpc.ClientConn, error) {
	ep, err := parseEndpoint(raw)
	if err != nil {
		return nil, err
	}
	eps := []endpoint{ep}
	r := manual.NewBuilderWithScheme(c.resolver.Scheme() + "x")
	r.InitialState(resolverState(eps))
	return grpc.NewClient(r.Scheme()+":///endpoint", c.dialOptions(r, eps)...)
}
