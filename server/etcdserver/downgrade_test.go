package etcdserver

import (
	"errors"
	"testing"

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
	s := startServer(t, testConfig(dir))
	waitFor(t, "cluster version", func() bool { return s.storedClusterVersion() != "" })
	do := func(action pb.DowngradeRequest_DowngradeAction, v string) (*pb.DowngradeResponse, error) {
		return s.Downgrade(testCtx(t), &pb.DowngradeRequest{Action: action, Version: v})
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
	st, err := s.Status(testCtx(t))
	if err != nil || !st.GetDowngradeInfo().GetEnabled() || st.GetDowngradeInfo().GetTargetVersion() != "3.6.0" {
		t.Fatalf("status after enable: %v, %v", st.GetDowngradeInfo(), err)
	}
	resp, err = do(pb.DowngradeRequest_VALIDATE, "3.6")
	check("validate in progress", resp, err, rpctypes.ErrGRPCDowngradeInProcess)
	resp, err = do(pb.DowngradeRequest_ENABLE, "3.6")
	check("enable in progress", resp, err, rpctypes.ErrGRPCDowngradeInProcess)

	// The downgrade survives a restart (it is in the backend).
	s.Stop()
	s = startServer(t, testConfig(dir))
	if d := s.storedDowngrade(); !d.Enabled || d.TargetVersion != "3.6.0" {
		t.Fatalf("downgrade after restart: %+v", d)
	}
	resp, err = do(pb.DowngradeRequest_CANCEL, "")
	check("cancel", resp, err, nil)
	st, err = s.Status(testCtx(t))
	if err != nil || st.GetDowngradeInfo().GetEnabled() || st.GetDowngradeInfo().GetTargetVersion() != "" {
		t.Fatalf("status after cancel: %v, %v", st.GetDowngradeInfo(), err)
	}
}
