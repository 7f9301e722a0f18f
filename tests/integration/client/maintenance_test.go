package client_test

import (
	"io"
	"slices"
	"testing"
	"time"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/tests/harness"
)

func TestClusterAndMaintenance(t *testing.T) {
	ms := startCluster(t, 3)
	c := newClient(t, ms[0].Endpoint())
	ctx := testCtx(t)
	list := must(c.MemberList(ctx))
	if len(list.Members) != 3 {
		t.Fatalf("%d members", len(list.Members))
	}
	if len(must(c.MemberList(ctx, client.WithSerializable())).Members) != 3 {
		t.Error("serializable member list")
	}
	st := must(c.Status(ctx, ms[1].Endpoint()))
	if st.Header.MemberId == 0 || st.Leader == 0 || st.IsLearner {
		t.Errorf("status %+v", st)
	}
	must(c.Put(ctx, "k", "v"))
	h := must(c.HashKV(ctx, ms[2].Endpoint(), 0))
	if h.Hash == 0 {
		t.Errorf("hash kv %+v", h)
	}
	if a := must(c.AlarmList(ctx)); len(a.Alarms) != 0 {
		t.Errorf("alarms %v", a.Alarms)
	}
	must(c.Defragment(ctx, ms[0].Endpoint()))
	rc := must(c.Snapshot(ctx))
	n, err := io.Copy(io.Discard, rc)
	rc.Close()
	if err != nil || n == 0 {
		t.Errorf("snapshot: %d bytes, %v", n, err)
	}
}

// TestSyncEndpoints syncs the endpoints from the member list, by hand and
// with AutoSyncInterval: they become the voters' client URLs, without the
// learner's.
func TestSyncEndpoints(t *testing.T) {
	ms := startCluster(t, 3)
	c := newClient(t, ms[0].Endpoint())
	learner := addLearner(t, c, ms)
	voters := urls(ms)
	slices.Sort(voters)
	sorted := func(eps []string) []string { return slices.Sorted(slices.Values(eps)) }
	if err := c.Sync(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := sorted(c.Endpoints()); !slices.Equal(got, voters) {
		t.Errorf("endpoints after sync: %v, want %v (learner %s)", got, voters, learner.Endpoint())
	}
	auto := harness.CairnClient(t, client.Config{Endpoints: []string{ms[0].Endpoint()}, DialTimeout: 5 * time.Second, AutoSyncInterval: 50 * time.Millisecond})
	waitUntil(t, "auto sync", func() bool { return len(auto.Endpoints()) > 1 })
	if got := sorted(auto.Endpoints()); !slices.Equal(got, voters) {
		t.Errorf("endpoints after auto sync: %v, want %v (learner %s)", got, voters, learner.Endpoint())
	}
	stopMember(t, ms[0])
	must(c.Get(testCtx(t), "k"))    // served by the synced endpoints
	must(auto.Get(testCtx(t), "k")) // and by the auto-synced ones
}
