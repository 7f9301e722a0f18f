package v3client

import (
	"context"
	"io"
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/api/v3electionpb"
	"github.com/cairnkv/cairn/api/v3lockpb"
)

func TestLockUnlock(t *testing.T) {
	ctx := testCtx(t)
	c := startMember(t)
	l1, l2 := grant(t, ctx, c), grant(t, ctx, c)

	got1, err := c.lock.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("svc"), Lease: l1})
	if err != nil {
		t.Fatal(err)
	}
	if string(got1.Key) != keyOf("svc", l1) || got1.Header.GetRevision() == 0 {
		t.Fatalf("Lock answered %v, want key %s and a header", got1, keyOf("svc", l1))
	}
	done := make(chan *v3lockpb.LockResponse, 1)
	go func() {
		resp, err := c.lock.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("svc"), Lease: l2})
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	unlock, err := c.lock.Unlock(ctx, &v3lockpb.UnlockRequest{Key: got1.Key})
	if err != nil {
		t.Fatal(err)
	}
	got2 := <-done
	if string(got2.GetKey()) != keyOf("svc", l2) {
		t.Fatalf("second Lock answered %v, want key %s", got2, keyOf("svc", l2))
	}
	// The second holder learns it holds the lock after the Unlock.
	if got2.Header.GetRevision() < unlock.Header.GetRevision() {
		t.Fatalf("second Lock header revision %d before the Unlock's %d", got2.Header.GetRevision(), unlock.Header.GetRevision())
	}
}

func TestServiceErrors(t *testing.T) {
	ctx := testCtx(t)
	c := startMember(t)
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"Lock on an unknown lease", func() error {
			_, err := c.lock.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("x"), Lease: 12345})
			return err
		}, "etcdserver: requested lease not found"},
		{"Campaign on an unknown lease", func() error {
			_, err := c.election.Campaign(ctx, &v3electionpb.CampaignRequest{Name: []byte("x"), Lease: 12345})
			return err
		}, "etcdserver: requested lease not found"},
		{"Leader of an empty election", func() error {
			_, err := c.election.Leader(ctx, &v3electionpb.LeaderRequest{Name: []byte("empty")})
			return err
		}, "election: no leader"},
		{"Proclaim without a leader", func() error {
			_, err := c.election.Proclaim(ctx, &v3electionpb.ProclaimRequest{Value: []byte("v")})
			return err
		}, `"leader" field must be provided`},
		{"Resign without a leader", func() error {
			_, err := c.election.Resign(ctx, &v3electionpb.ResignRequest{})
			return err
		}, `"leader" field must be provided`},
		{"Proclaim of a leadership never won", func() error {
			_, err := c.election.Proclaim(ctx, &v3electionpb.ProclaimRequest{
				Leader: &v3electionpb.LeaderKey{Name: []byte("x"), Key: []byte("x/1"), Rev: 1, Lease: grant(t, ctx, c)}})
			return err
		}, "election: not leader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := status.Convert(tc.call())
			// etcd answers these with the recipe's error text and gRPC's
			// Unknown code (its handlers return plain errors).
			if st.Code() != codes.Unknown || st.Message() != tc.want {
				t.Fatalf("got %v %q, want Unknown %q", st.Code(), st.Message(), tc.want)
			}
		})
	}
}

func TestElection(t *testing.T) {
	ctx := testCtx(t)
	c := startMember(t)
	l1, l2 := grant(t, ctx, c), grant(t, ctx, c)
	name := []byte("elect")

	camp, err := c.election.Campaign(ctx, &v3electionpb.CampaignRequest{Name: name, Lease: l1, Value: []byte("a")})
	if err != nil {
		t.Fatal(err)
	}
	lk := camp.Leader
	if string(lk.Name) != "elect" || string(lk.Key) != keyOf("elect", l1) || lk.Lease != l1 || lk.Rev != camp.Header.Revision {
		t.Fatalf("Campaign's leader key %v, want name elect, key %s, lease %x, rev %d", lk, keyOf("elect", l1), l1, camp.Header.Revision)
	}
	octx, stop := context.WithCancel(ctx)
	defer stop()
	obs, err := c.election.Observe(octx, &v3electionpb.LeaderRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	expectValue(t, obs, "a")
	if _, err := c.election.Proclaim(ctx, &v3electionpb.ProclaimRequest{Leader: lk, Value: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	expectValue(t, obs, "b")
	leader, err := c.election.Leader(ctx, &v3electionpb.LeaderRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if string(leader.Kv.Value) != "b" || string(leader.Kv.Key) != string(lk.Key) {
		t.Fatalf("Leader answered %v, want %s=b", leader.Kv, lk.Key)
	}

	done := make(chan error, 1)
	go func() {
		_, err := c.election.Campaign(ctx, &v3electionpb.CampaignRequest{Name: name, Lease: l2, Value: []byte("c")})
		done <- err
	}()
	if _, err := c.election.Resign(ctx, &v3electionpb.ResignRequest{Leader: lk}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	expectValue(t, obs, "c")
	stop()
	for {
		if _, err := obs.Recv(); err != nil {
			if err != io.EOF && status.Code(err) != codes.Canceled {
				t.Fatalf("Observe ended with %v", err)
			}
			break
		}
	}
}

func expectValue(t *testing.T, obs v3electionpb.Election_ObserveClient, want string) {
	t.Helper()
	resp, err := obs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Kv.GetValue()) != want {
		t.Fatalf("observed %q, want %q", resp.Kv.GetValue(), want)
	}
}

// TestAuthTokenForwarded checks that the inner calls run as the caller:
// a user may lock only where it may write.
func TestAuthTokenForwarded(t *testing.T) {
	ctx := testCtx(t)
	c := startMember(t)
	setupAuth(t, ctx, c)
	auth, err := c.auth.Authenticate(ctx, &pb.AuthenticateRequest{Name: "alice", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	actx := withToken(ctx, auth.Token)
	lease, err := c.lease.LeaseGrant(actx, &pb.LeaseGrantRequest{TTL: 60})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.lock.Lock(actx, &v3lockpb.LockRequest{Name: []byte("allowed/l"), Lease: lease.ID}); err != nil {
		t.Fatalf("Lock where alice may write: %v", err)
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"denied prefix", actx, "etcdserver: permission denied"},
		{"no token", ctx, "etcdserver: user name is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.lock.Lock(tc.ctx, &v3lockpb.LockRequest{Name: []byte("denied/l"), Lease: lease.ID})
			if st := status.Convert(err); st.Message() != tc.want {
				t.Fatalf("Lock: %v, want %q", err, tc.want)
			}
		})
	}
}

// setupAuth creates root and alice (read-write on allowed/) and enables
// auth.
func setupAuth(t *testing.T, ctx context.Context, c *conns) {
	t.Helper()
	steps := []func() error{
		func() error {
			_, err := c.auth.UserAdd(ctx, &pb.AuthUserAddRequest{Name: "root", Password: "rootpw"})
			return err
		},
		func() error {
			_, err := c.auth.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"})
			return err
		},
		func() error {
			_, err := c.auth.UserAdd(ctx, &pb.AuthUserAddRequest{Name: "alice", Password: "pw"})
			return err
		},
		func() error {
			_, err := c.auth.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: "writer"})
			return err
		},
		func() error {
			_, err := c.auth.RoleGrantPermission(ctx, &pb.AuthRoleGrantPermissionRequest{Name: "writer",
				Perm: &authpb.Permission{PermType: authpb.READWRITE, Key: []byte("allowed/"), RangeEnd: []byte("allowed0")}})
			return err
		},
		func() error {
			_, err := c.auth.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: "alice", Role: "writer"})
			return err
		},
		func() error {
			_, err := c.auth.AuthEnable(ctx, &pb.AuthEnableRequest{})
			return err
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("auth setup step %d: %v", i, err)
		}
	}
}
