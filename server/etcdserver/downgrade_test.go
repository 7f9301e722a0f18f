package etcdserver

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

func TestDowngradeTarget(t *testing.T) {
	for in, want := range map[string]string{"3.6": "3.6.0", "3.6.0": "3.6.0", "3.6.9": "3.6.0", "3.6.1-rc.0": "3.6.0", "4.0": "4.0.0"} {
		got, err := downgradeTarget(in)
		if err != nil || got != want {
			t.Errorf("downgradeTarget(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "3", "v3.6", "3.x", "3.6.0.0", "three"} {
		if _, err := downgradeTarget(in); !errors.Is(err, rpctypes.ErrGRPCWrongDowngradeVersionFormat) {
			t.Errorf("downgradeTarget(%q) err = %v, want wrong format", in, err)
		}
	}
}

func TestDowngradeLifecycle(t *testing.T) {
	dir := t.TempDir()
	// The version monitor acts only at leader changes until the restart.
	cfg := testConfig(dir)
	cfg.VersionMonitorInterval = time.Hour
	s := startServer(t, cfg)
	waitFor(t, "cluster version", func() bool { return s.versions.clusterVersion() == "3.7.0" })
	do := func(action pb.DowngradeRequest_DowngradeAction, v string) (*pb.DowngradeResponse, error) {
		return s.maint.Downgrade(testCtx(t), &pb.DowngradeRequest{Action: action, Version: v})
	}
	check := func(what string, resp *pb.DowngradeResponse, err, wantErr error) {
		t.Helper()
		if !errors.Is(err, wantErr) {
			t.Fatalf("%s: err = %v, want %v", what, err, wantErr)
		}
		if wantErr == nil && resp.GetVersion() != "3.7" {
			t.Fatalf("%s: version = %q, want 3.7", what, resp.GetVersion())
		}
	}
	resp, err := do(pb.DowngradeRequest_CANCEL, "")
	check("cancel with none", resp, err, nil)
	resp, err = do(pb.DowngradeRequest_VALIDATE, "3.5")
	check("validate 3.5", resp, err, rpctypes.ErrGRPCInvalidDowngradeTargetVersion)
	resp, err = do(pb.DowngradeRequest_VALIDATE, "3.7")
	check("validate 3.7", resp, err, rpctypes.ErrGRPCInvalidDowngradeTargetVersion)
	resp, err = do(pb.DowngradeRequest_VALIDATE, "bad")
	check("validate bad", resp, err, rpctypes.ErrGRPCWrongDowngradeVersionFormat)
	resp, err = do(pb.DowngradeRequest_VALIDATE, "3.6")
	check("validate 3.6", resp, err, nil)
	resp, err = do(pb.DowngradeRequest_ENABLE, "3.6.2")
	check("enable 3.6.2", resp, err, nil)
	st, err := s.maint.Status(testCtx(t))
	if err != nil || !st.GetDowngradeInfo().GetEnabled() || st.GetDowngradeInfo().GetTargetVersion() != "3.6.0" {
		t.Fatalf("status after enable: %v, %v", st.GetDowngradeInfo(), err)
	}
	resp, err = do(pb.DowngradeRequest_VALIDATE, "3.6")
	check("validate in progress", resp, err, rpctypes.ErrGRPCDowngradeInProcess)
	resp, err = do(pb.DowngradeRequest_ENABLE, "3.6")
	check("enable in progress", resp, err, rpctypes.ErrGRPCDowngradeInProcess)

	// The downgrade survives a restart (it is in the backend), and the new
	// leader lowers the cluster and storage versions to the target.
	s.Stop()
	cfg = testConfig(dir)
	cfg.VersionMonitorInterval = 10 * time.Millisecond
	s = startServer(t, cfg)
	if d := s.versions.downgrade(); !d.Enabled || d.TargetVersion != "3.6.0" {
		t.Fatalf("downgrade after restart: %+v", d)
	}
	waitFor(t, "cluster version 3.6.0", func() bool { return s.ClusterVersion() == "3.6.0" })
	if got := s.StorageVersion(); got != "3.6.0" {
		t.Fatalf("storage version with the cluster at 3.6 = %q, want 3.6.0", got)
	}
	// As etcd, lowering the cluster version forces a snapshot (far below
	// --snapshot-count here), so the WAL after it holds no newer entries.
	waitFor(t, "snapshot after the cluster version downgrade", func() bool {
		snaps, _ := filepath.Glob(filepath.Join(cfg.snapDir(), "*.snap"))
		return len(snaps) > 0
	})
	resp, err = do(pb.DowngradeRequest_CANCEL, "")
	if err != nil || resp.GetVersion() != "3.6" {
		t.Fatalf("cancel: %v, %v; want cluster version 3.6", resp, err)
	}
	st, err = s.maint.Status(testCtx(t))
	if err != nil || st.GetDowngradeInfo().GetEnabled() || st.GetDowngradeInfo().GetTargetVersion() != "" {
		t.Fatalf("status after cancel: %v, %v", st.GetDowngradeInfo(), err)
	}
	// Without a downgrade the cluster version goes back up to the members'.
	waitFor(t, "cluster version 3.7.0", func() bool { return s.ClusterVersion() == "3.7.0" })
	if got := s.StorageVersion(); got != "3.7.0" {
		t.Fatalf("storage version after cancel = %q, want 3.7.0", got)
	}
}
