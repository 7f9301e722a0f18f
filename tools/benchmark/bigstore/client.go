package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cairnkv/cairn/tools/benchmark/cluster"
	"github.com/cairnkv/cairn/tools/benchmark/procfs"
)

// dial opens a connection to a member's client URL. It retries a refused
// connection every few milliseconds (gRPC's default backoff grows to
// seconds), so the first request after a restart is not delayed by the
// client.
func dial(clientURL string) (*grpc.ClientConn, error) {
	return grpc.NewClient(strings.TrimPrefix(clientURL, "http://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 5 * time.Millisecond, Multiplier: 1.2, MaxDelay: 20 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}),
	)
}

// withConn runs do with a fresh connection to m.
func withConn(m *cluster.Member, do func(*grpc.ClientConn) error) error {
	cc, err := dial(m.ClientURL)
	if err != nil {
		return err
	}
	defer cc.Close()
	return do(cc)
}

// restartProbeKey is the key the first Get after a restart reads; any
// key does, the read's barrier is what is timed.
var restartProbeKey = []byte("bigstore/restart-probe")

// firstLinearizableGet retries a linearizable Get until one succeeds and
// returns when it did. It gives up when the process exits or ctx ends.
func firstLinearizableGet(ctx context.Context, kv pb.KVClient, exited <-chan struct{}) (time.Time, error) {
	var lastErr error
	for {
		attempt, cancel := context.WithTimeout(ctx, time.Second)
		_, err := kv.Range(attempt, &pb.RangeRequest{Key: restartProbeKey}, grpc.WaitForReady(true))
		cancel()
		if err == nil {
			return time.Now(), nil
		}
		lastErr = err
		select {
		case <-exited:
			return time.Time{}, fmt.Errorf("exited before serving a linearizable Get (last error: %v)", lastErr)
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("no linearizable Get: %w (last error: %v)", ctx.Err(), lastErr)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// startTimeout bounds a restart of a big store.
const startTimeout = 30 * time.Minute

// timedStart starts a stopped member and measures the time from exec to
// its first successful linearizable Get and to its ready log line, and
// its memory at the Get.
func timedStart(ctx context.Context, m *cluster.Member, procRoot string) (restartSample, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	cc, err := dial(m.ClientURL)
	if err != nil {
		return restartSample{}, err
	}
	defer cc.Close()
	if err := m.Start(); err != nil {
		return restartSample{}, err
	}
	exec := m.StartedAt()
	got, err := firstLinearizableGet(ctx, pb.NewKVClient(cc), m.Exited())
	if err != nil {
		return restartSample{}, fmt.Errorf("%w; log %s:\n%s", err, m.LogPath, cluster.Tail(m.LogPath))
	}
	mem, err := procfs.ReadMemory(procRoot, m.PID())
	if err != nil {
		return restartSample{}, err
	}
	ready, err := awaitLine(ctx, m, readyLine)
	if err != nil {
		return restartSample{}, err
	}
	return restartSample{
		ReadySeconds:    ready.Sub(exec).Seconds(),
		FirstGetSeconds: got.Sub(exec).Seconds(),
		RSSAtGet:        mem.RSSBytes,
		PeakRSSAtGet:    mem.PeakRSSBytes,
	}, nil
}

// awaitLine waits until m has logged a line containing substr since its
// latest start.
func awaitLine(ctx context.Context, m *cluster.Member, substr string) (time.Time, error) {
	for {
		if at, ok := m.LineSeen(substr); ok {
			return at, nil
		}
		select {
		case <-m.Exited():
			return time.Time{}, fmt.Errorf("exited before logging %q", substr)
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("no %q in the log: %w", substr, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// measureSizes reads a running member's memory, its Status sizes and the
// sizes of its files.
func measureSizes(ctx context.Context, m *cluster.Member, procRoot string) (sizes, error) {
	mem, err := procfs.ReadMemory(procRoot, m.PID())
	if err != nil {
		return sizes{}, err
	}
	sz := sizes{PeakRSS: mem.PeakRSSBytes, RSS: mem.RSSBytes}
	err = withConn(m, func(cc *grpc.ClientConn) error {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		st, err := pb.NewMaintenanceClient(cc).Status(ctx, &pb.StatusRequest{})
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		sz.DBSize, sz.DBSizeInUse, sz.Revision = st.GetDbSize(), st.GetDbSizeInUse(), st.GetHeader().GetRevision()
		return nil
	})
	if err != nil {
		return sizes{}, err
	}
	return sz, fileSizes(m.DataDir, &sz)
}

// fileSizes fills in the db file, WAL and whole data directory sizes
// (apparent sizes: what ls shows, including preallocated WAL space).
func fileSizes(dataDir string, sz *sizes) error {
	db, err := os.Stat(filepath.Join(dataDir, "member", "snap", "db"))
	if err != nil {
		return err
	}
	sz.DBFile = db.Size()
	if sz.WAL, err = treeSize(filepath.Join(dataDir, "member", "wal")); err != nil {
		return err
	}
	sz.DataDir, err = treeSize(dataDir)
	return err
}

// treeSize sums the sizes of the regular files under dir.
func treeSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	return total, err
}
