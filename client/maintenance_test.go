package client

import (
	"io"
	"testing"
)

func TestClusterAndMaintenance(t *testing.T) {
	ms := startCluster(t, 3)
	c := newClient(t, ms[0].url)
	ctx := testCtx(t)
	list := must(c.MemberList(ctx))
	if len(list.Members) != 3 {
		t.Fatalf("%d members", len(list.Members))
	}
	if len(must(c.MemberList(ctx, WithSerializable())).Members) != 3 {
		t.Error("serializable member list")
	}
	st := must(c.Status(ctx, ms[1].url))
	if st.Header.MemberId == 0 || st.Leader == 0 || st.IsLearner {
		t.Errorf("status %+v", st)
	}
	must(c.Put(ctx, "k", "v"))
	h := must(c.HashKV(ctx, ms[2].url, 0))
	if h.Hash == 0 {
		t.Errorf("hash kv %+v", h)
	}
	if a := must(c.AlarmList(ctx)); len(a.Alarms) != 0 {
		t.Errorf("alarms %v", a.Alarms)
	}
	must(c.Defragment(ctx, ms[0].url))
	rc := must(c.Snapshot(ctx))
	n, err := io.Copy(io.Discard, rc)
	rc.Close()
	if err != nil || n == 0 {
		t.Errorf("snapshot: %d bytes, %v", n, err)
	}
}

func TestSyncEndpoints(t *testing.T) {
	ms := startCluster(t, 3)
	c := newClient(t, ms[0].url)
	if err := c.Sync(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := c.Endpoints(); len(got) != 3 {
		t.Errorf("endpoints after sync: %v", got)
	}
	ms[0].stop()
	must(c.Get(testCtx(t), "k")) // served by the synced endpoints
}
