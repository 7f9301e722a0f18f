package v3rpc

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// snapshotChunkBytes is the blob size of one Snapshot message: several OS
// pages, as bbolt writes them.
const snapshotChunkBytes = 32 * 1024

// MaintenanceServer is what the Maintenance service needs from a member
// (etcdserver.Maintenance); Config.Maintenance gets the service registered.
type MaintenanceServer interface {
	Status(ctx context.Context) (*pb.StatusResponse, error)
	Hash(ctx context.Context) (*pb.HashResponse, error)
	HashKV(ctx context.Context, rev int64) (*pb.HashKVResponse, error)
	Defragment(ctx context.Context) error
	Snapshot(ctx context.Context) (backend.Snapshot, error)
	Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error)
	MoveLeader(ctx context.Context, r *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error)
}

// maintenanceServer serves etcd's Maintenance service. Downgrade is served
// when the MaintenanceServer implements it (downgrader), else
// Unimplemented.
type maintenanceServer struct {
	pb.UnimplementedMaintenanceServer
	s      Server // for headers
	m      MaintenanceServer
	lg     *zap.Logger
	health *healthNotifier
}

func newMaintenanceServer(s Server, m MaintenanceServer, lg *zap.Logger, hn *healthNotifier) *maintenanceServer {
	return &maintenanceServer{s: s, m: m, lg: lg, health: hn}
}

func (ms *maintenanceServer) Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	return withHeader(ms.s, ms.m.Alarm, ctx, r)
}

func (ms *maintenanceServer) Status(ctx context.Context, _ *pb.StatusRequest) (*pb.StatusResponse, error) {
	resp, err := ms.m.Status(ctx)
	return answered(ms.s, resp, err)
}

func (ms *maintenanceServer) Defragment(ctx context.Context, _ *pb.DefragmentRequest) (*pb.DefragmentResponse, error) {
	ms.lg.Info("starting defragment")
	ms.health.defragStarted()
	defer ms.health.defragFinished()
	if err := ms.m.Defragment(ctx); err != nil {
		ms.lg.Warn("failed to defragment", zap.Error(err))
		return nil, err
	}
	ms.lg.Info("finished defragment")
	// etcd answers Defragment without a header.
	return &pb.DefragmentResponse{}, nil
}

func (ms *maintenanceServer) Hash(ctx context.Context, _ *pb.HashRequest) (*pb.HashResponse, error) {
	resp, err := ms.m.Hash(ctx)
	return answered(ms.s, resp, err)
}

func (ms *maintenanceServer) HashKV(ctx context.Context, r *pb.HashKVRequest) (*pb.HashKVResponse, error) {
	resp, err := ms.m.HashKV(ctx, r.Revision)
	return answered(ms.s, resp, err)
}

func (ms *maintenanceServer) MoveLeader(ctx context.Context, r *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	// etcd answers MoveLeader without a header.
	return ms.m.MoveLeader(ctx, r)
}

// Snapshot streams a point-in-time copy of the db in chunks, each with the
// bytes still to come and the storage version, then one last message whose
// blob is the SHA-256 of the whole db, which etcdctl/etcdutl check on
// restore. As in etcd, the messages carry no header.
func (ms *maintenanceServer) Snapshot(_ *pb.SnapshotRequest, stream grpc.ServerStreamingServer[pb.SnapshotResponse]) error {
	ctx := stream.Context()
	storageVersion := ms.storageVersion(ctx)
	snap, err := ms.m.Snapshot(ctx)
	if err != nil {
		return err
	}
	total := snap.Size()
	start := time.Now()
	ms.lg.Info("sending database snapshot to client",
		zap.Int64("total-bytes", total), zap.String("storage-version", storageVersion))

	pr, pw := io.Pipe()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		_, werr := snap.WriteTo(pw)
		if cerr := snap.Close(); cerr != nil {
			ms.lg.Warn("failed to close snapshot", zap.Error(cerr))
		}
		pw.CloseWithError(werr)
	}()
	// Closing the reader unblocks the writer if the client goes away.
	defer func() { pr.Close(); <-writerDone }()

	digest := sha256.New()
	if err := sendSnapshotChunks(pr, total, storageVersion, digest, stream); err != nil {
		return err
	}
	last := &pb.SnapshotResponse{Blob: digest.Sum(nil), Version: storageVersion}
	if err := stream.Send(last); err != nil {
		return err
	}
	ms.lg.Info("successfully sent database snapshot to client",
		zap.Int64("total-bytes", total), zap.Duration("took", time.Since(start)))
	return nil
}

// sendSnapshotChunks sends total bytes read from r in snapshotChunkBytes
// blobs, feeding each into digest.
func sendSnapshotChunks(r io.Reader, total int64, version string, digest io.Writer,
	stream grpc.ServerStreamingServer[pb.SnapshotResponse]) error {
	for sent := int64(0); sent < total; {
		// A new buffer per message: Send may still hold the previous one.
		buf := make([]byte, min(snapshotChunkBytes, total-sent))
		n, err := io.ReadFull(r, buf)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return err
		}
		if n == 0 {
			return io.ErrUnexpectedEOF // the snapshot is shorter than its Size
		}
		sent += int64(n)
		digest.Write(buf[:n])
		resp := &pb.SnapshotResponse{RemainingBytes: uint64(total - sent), Blob: buf[:n], Version: version}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	return nil
}

// storageVersion is the db's storage version as Status reports it, or ""
// when the member cannot say.
func (ms *maintenanceServer) storageVersion(ctx context.Context) string {
	st, err := ms.m.Status(ctx)
	if err != nil || st == nil {
		return ""
	}
	return st.StorageVersion
}

// downgrader is the member side of Maintenance.Downgrade.
type downgrader interface {
	Downgrade(ctx context.Context, r *pb.DowngradeRequest) (*pb.DowngradeResponse, error)
}

// Downgrade validates, enables or cancels a cluster downgrade.
func (ms *maintenanceServer) Downgrade(ctx context.Context, r *pb.DowngradeRequest) (*pb.DowngradeResponse, error) {
	d, ok := ms.m.(downgrader)
	if !ok {
		return ms.UnimplementedMaintenanceServer.Downgrade(ctx, r)
	}
	return withHeader(ms.s, d.Downgrade, ctx, r)
}
