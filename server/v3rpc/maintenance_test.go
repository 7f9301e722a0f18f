package v3rpc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand"
	"net"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/server/storage/backend"
)

func TestSnapshot(t *testing.T) {
	sizes := []int{0, 1, snapshotChunkBytes, 3*snapshotChunkBytes + 17}
	for _, size := range sizes {
		t.Run("", func(t *testing.T) {
			f := newFakeServer()
			f.snapshot = make([]byte, size)
			rand.New(rand.NewSource(int64(size))).Read(f.snapshot)
			c := serveFake(t, f, Config{})

			stream, err := c.maint.Snapshot(context.Background(), &pb.SnapshotRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var msgs []*pb.SnapshotResponse
			for {
				m, err := stream.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				msgs = append(msgs, m)
			}
			checkSnapshotMessages(t, msgs, f.snapshot)
		})
	}
}

func checkSnapshotMessages(t *testing.T, msgs []*pb.SnapshotResponse, db []byte) {
	t.Helper()
	if len(msgs) == 0 {
		t.Fatal("no messages")
	}
	var got []byte
	remaining := uint64(len(db))
	for i, m := range msgs {
		if m.Version != "3.7.0" {
			t.Fatalf("message %d version %q", i, m.Version)
		}
		if m.Header != nil {
			t.Fatalf("message %d has a header (etcd sends none)", i)
		}
		if i == len(msgs)-1 {
			break
		}
		if len(m.Blob) == 0 || len(m.Blob) > snapshotChunkBytes {
			t.Fatalf("message %d blob of %d bytes", i, len(m.Blob))
		}
		remaining -= uint64(len(m.Blob))
		if m.RemainingBytes != remaining {
			t.Fatalf("message %d remaining %d, want %d", i, m.RemainingBytes, remaining)
		}
		got = append(got, m.Blob...)
	}
	if !bytes.Equal(got, db) {
		t.Fatalf("received %d bytes differing from the %d-byte db", len(got), len(db))
	}
	last := msgs[len(msgs)-1]
	sum := sha256.Sum256(db)
	if !bytes.Equal(last.Blob, sum[:]) || last.RemainingBytes != 0 {
		t.Fatalf("last message %x remaining %d, want sha256 %x", last.Blob, last.RemainingBytes, sum)
	}
}

func TestMaintenancePassThrough(t *testing.T) {
	f := newFakeServer()
	c := serveFake(t, f, Config{})
	ctx := context.Background()

	st, err := c.maint.Status(ctx, &pb.StatusRequest{})
	if err != nil || st.Version != "3.7.1" || st.Leader != fakeMemberID {
		t.Fatalf("status %v %v", st, err)
	}
	h, err := c.maint.Hash(ctx, &pb.HashRequest{})
	if err != nil || h.Hash != 42 {
		t.Fatalf("hash %v %v", h, err)
	}
	hkv, err := c.maint.HashKV(ctx, &pb.HashKVRequest{Revision: 9})
	if err != nil || hkv.Hash != 43 || hkv.HashRevision != 9 {
		t.Fatalf("hashkv %v %v", hkv, err)
	}
	al, err := c.maint.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: 5, Alarm: pb.AlarmType_NOSPACE})
	if err != nil || len(al.Alarms) != 1 || al.Alarms[0].Alarm != pb.AlarmType_NOSPACE {
		t.Fatalf("alarm %v %v", al, err)
	}
	_, err = c.maint.Downgrade(ctx, &pb.DowngradeRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("downgrade: %v", err)
	}
}

func TestHealthService(t *testing.T) {
	c := serveFake(t, newFakeServer(), Config{})
	resp, err := healthpb.NewHealthClient(c.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health %v %v", resp, err)
	}
}

// TestMaxRequestBytes: a message above MaxRequestBytes plus the gRPC
// overhead is refused by gRPC itself; one just below reaches the member.
func TestMaxRequestBytes(t *testing.T) {
	const limit = 1024
	f := newFakeServer()
	c := serveFake(t, f, Config{MaxRequestBytes: limit})
	ctx := context.Background()
	_, err := c.kv.Put(ctx, &pb.PutRequest{Key: []byte("k"), Value: make([]byte, limit+grpcOverheadBytes)})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("oversized put: %v", err)
	}
	if _, err := c.kv.Put(ctx, &pb.PutRequest{Key: []byte("k"), Value: make([]byte, limit+grpcOverheadBytes-64)}); err != nil {
		t.Fatalf("put within the gRPC limit: %v", err)
	}
}

// failingSnapshot writes part of the db, then fails.
type failingSnapshot struct{ fakeSnapshot }

func (s *failingSnapshot) WriteTo(w io.Writer) (int64, error) {
	n, _ := w.Write(s.data[:len(s.data)/2])
	return int64(n), errors.New("read error in the db file")
}

type failingSnapshotServer struct{ *fakeServer }

func (f failingSnapshotServer) Snapshot(context.Context) (backend.Snapshot, error) {
	return &failingSnapshot{fakeSnapshot{data: make([]byte, 3*snapshotChunkBytes)}}, nil
}

// TestSnapshotWriteFails: the stream ends with the error and without the
// checksum message, so a client cannot take the partial db as complete.
func TestSnapshotWriteFails(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fs := failingSnapshotServer{newFakeServer()}
	gs := NewServer(fs, Config{KV: fs, Maintenance: fs})
	served := make(chan struct{})
	go func() { defer close(served); gs.Serve(l) }()
	defer func() { gs.Stop(); <-served }()
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	stream, err := pb.NewMaintenanceClient(conn).Snapshot(context.Background(), &pb.SnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	received := 0
	for {
		m, err := stream.Recv()
		if err != nil {
			if status.Code(err) != codes.Unknown || status.Convert(err).Message() != "read error in the db file" {
				t.Fatalf("stream ended with %v", err)
			}
			break
		}
		received += len(m.Blob)
	}
	if received > 3*snapshotChunkBytes/2 {
		t.Fatalf("received %d bytes of a db that failed at half", received)
	}
}
