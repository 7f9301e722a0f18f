package client_test

import (
	"testing"

	"github.com/cairnkv/cairn/client"
)

func TestTxn(t *testing.T) {
	c, ctx := newMemberClient(t)
	put := must(c.Put(ctx, "k", "v"))
	rev := put.Header.Revision
	l := must(c.Grant(ctx, 60))
	must(c.Put(ctx, "leased", "x", client.WithLease(l.ID)))

	holds := []client.Cmp{
		client.Compare(client.Value("k"), "=", "v"),
		client.Compare(client.Value("k"), "!=", "w"),
		client.Compare(client.Version("k"), "=", 1),
		client.Compare(client.Version("missing"), "=", 0),
		client.Compare(client.CreateRevision("k"), "=", rev),
		client.Compare(client.ModRevision("k"), "<", rev+1),
		client.Compare(client.ModRevision("k"), ">", int64(0)),
		client.Compare(client.LeaseValue("leased"), "=", l.ID),
		client.Compare(client.LeaseValue("k"), "=", client.NoLease),
		client.Compare(client.Version("k").WithPrefix(), ">", 0),
		client.Compare(client.Version("a").WithRange("z"), ">", 0),
	}
	for i, cmp := range holds {
		r := must(c.Txn(ctx).If(cmp).Commit())
		if !r.Succeeded {
			t.Errorf("comparison %d does not hold", i)
		}
	}
	r := must(c.Txn(ctx).
		If(client.Compare(client.Value("k"), "=", "other")).
		Then(client.OpPut("k", "then")).
		Else(client.OpPut("k", "else"), client.OpGet("k"), client.OpTxn(nil, []client.Op{client.OpDelete("leased")}, nil)).
		Commit())
	if r.Succeeded || len(r.Responses) != 3 {
		t.Fatalf("txn: succeeded %v, %d responses", r.Succeeded, len(r.Responses))
	}
	if v := r.Responses[1].GetResponseRange().Kvs[0].Value; string(v) != "else" {
		t.Errorf("get inside txn = %q, want else", v)
	}
	if n := r.Responses[2].GetResponseTxn().Responses[0].GetResponseDeleteRange().Deleted; n != 1 {
		t.Errorf("nested delete deleted %d", n)
	}
}

func TestTxnOrderPanics(t *testing.T) {
	c := newClient(t, startMember(t).Endpoint())
	for name, f := range map[string]func(){
		"if twice":      func() { c.Txn(t.Context()).If().If() },
		"if after then": func() { c.Txn(t.Context()).Then().If() },
		"then twice":    func() { c.Txn(t.Context()).Then().Then() },
		"else twice":    func() { c.Txn(t.Context()).Else().Else() },
		"bad operator":  func() { client.Compare(client.Value("k"), "~", "v") },
		"bad value":     func() { client.Compare(client.Value("k"), "=", 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
