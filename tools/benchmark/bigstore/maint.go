package main

import (
	"context"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// maintenanceTimeout bounds one compaction or defragmentation call.
const maintenanceTimeout = 30 * time.Minute

// compaction starts the member (its start is not one of the measured
// restarts) and compacts every revision but the newest under the probe.
func (r *runner) compaction(ctx context.Context, s *server) error {
	if _, err := timedStart(ctx, s.member(), r.procRoot); err != nil {
		return err
	}
	m, err := r.probed(ctx, s, "compaction", func(ctx context.Context, cc *grpc.ClientConn) (int64, error) {
		st, err := pb.NewMaintenanceClient(cc).Status(ctx, &pb.StatusRequest{})
		if err != nil {
			return 0, fmt.Errorf("status: %w", err)
		}
		rev := st.GetHeader().GetRevision()
		_, err = pb.NewKVClient(cc).Compact(ctx, &pb.CompactionRequest{Revision: rev, Physical: true})
		return rev, err
	})
	s.res.Compaction = m
	return err
}

// defrag defragments the (compacted) member's backend under the probe.
func (r *runner) defrag(ctx context.Context, s *server) error {
	m, err := r.probed(ctx, s, "defrag", func(ctx context.Context, cc *grpc.ClientConn) (int64, error) {
		_, err := pb.NewMaintenanceClient(cc).Defragment(ctx, &pb.DefragmentRequest{})
		return 0, err
	})
	s.res.Defrag = m
	return err
}

// probed runs call (which returns the revision it acted on, if any) with
// the probe running for a window before it, during it and a window after
// it, and measures the sizes once the probe has stopped. A failed call is
// recorded and returned. With --profile-seconds, profiles of the call's
// start and of the window after it are fetched into the report directory
// as <server>-<what>-{during,after}.*; the after capture begins once the
// during one has ended (one execution trace at a time), which is at the
// call's end unless the call was shorter than the capture.
func (r *runner) probed(ctx context.Context, s *server, what string, call func(context.Context, *grpc.ClientConn) (int64, error)) (*maintenanceResult, error) {
	var res maintenanceResult
	err := withConn(s.member(), func(cc *grpc.ClientConn) error {
		walr := newWALReader(s.member().ClientURL)
		var wal [4]walFsyncs
		wal[0] = walr.read(ctx)
		p := startProbe(ctx, pb.NewKVClient(cc), r.cfg.probeInterval, r.cfg.probeKeys)
		sleep(ctx, r.cfg.window)
		wal[1] = walr.read(ctx)
		callStart := p.since()
		label := s.name + "-" + what
		profiled := r.prof.capture(ctx, s.member().ClientURL, label+"-during", r.log)
		callCtx, cancel := context.WithTimeout(ctx, maintenanceTimeout)
		rev, callErr := call(callCtx, cc)
		cancel()
		callEnd := p.since()
		wal[2] = walr.read(ctx)
		profiled()
		profiled = r.prof.capture(ctx, s.member().ClientURL, label+"-after", r.log)
		sleep(ctx, r.cfg.window)
		wal[3] = walr.read(ctx)
		profiled()
		samples := p.finish()
		res.Revision, res.TookSeconds = rev, (callEnd - callStart).Seconds()
		res.Windows = splitWindows(samples, callStart, callEnd, r.cfg.window, wal)
		if callErr != nil {
			res.Error = callErr.Error()
		}
		return callErr
	})
	if err != nil {
		return &res, err
	}
	res.After, err = measureSizes(ctx, s.member(), r.procRoot)
	return &res, err
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
