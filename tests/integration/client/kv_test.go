package client_test

import (
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cairnkv/cairn/client"
)

func TestKV(t *testing.T) {
	c, ctx := newMemberClient(t)
	for _, k := range []string{"a", "b/1", "b/2", "b/3", "c"} {
		must(c.Put(ctx, k, "v-"+k))
	}
	check := func(name string, r *client.GetResponse, want string) {
		t.Helper()
		if got := keys(r); got != want {
			t.Errorf("%s: keys %q, want %q", name, got, want)
		}
	}
	r := must(c.Get(ctx, "a"))
	if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v-a" {
		t.Fatalf("Get a = %v", r.Kvs)
	}
	check("prefix", must(c.Get(ctx, "b/", client.WithPrefix())), "b/1,b/2,b/3")
	check("all", must(c.Get(ctx, "", client.WithPrefix())), "a,b/1,b/2,b/3,c")
	check("range", must(c.Get(ctx, "b/1", client.WithRange("b/3"))), "b/1,b/2")
	check("fromkey", must(c.Get(ctx, "b/3", client.WithFromKey())), "b/3,c")
	check("limit", must(c.Get(ctx, "", client.WithPrefix(), client.WithLimit(2))), "a,b/1")
	check("sort", must(c.Get(ctx, "b/", client.WithPrefix(), client.WithSort(client.SortByKey, client.SortDescend))), "b/3,b/2,b/1")
	check("serializable", must(c.Get(ctx, "c", client.WithSerializable())), "c")
	aRev := r.Kvs[0].ModRevision
	check("minmod", must(c.Get(ctx, "", client.WithPrefix(), client.WithMinModRev(aRev+3))), "b/3,c")
	check("maxmod", must(c.Get(ctx, "", client.WithPrefix(), client.WithMaxModRev(aRev+1))), "a,b/1")
	check("mincreate", must(c.Get(ctx, "", client.WithPrefix(), client.WithMinCreateRev(aRev+4))), "c")
	check("maxcreate", must(c.Get(ctx, "", client.WithPrefix(), client.WithMaxCreateRev(aRev))), "a")

	ko := must(c.Get(ctx, "a", client.WithKeysOnly()))
	if len(ko.Kvs) != 1 || ko.Kvs[0].Value != nil {
		t.Errorf("keys only: %v", ko.Kvs)
	}
	co := must(c.Get(ctx, "b/", client.WithPrefix(), client.WithCountOnly()))
	if co.Count != 3 || len(co.Kvs) != 0 {
		t.Errorf("count only: count %d, kvs %v", co.Count, co.Kvs)
	}

	p := must(c.Put(ctx, "a", "new", client.WithPrevKV()))
	if p.PrevKv == nil || string(p.PrevKv.Value) != "v-a" {
		t.Errorf("put prev kv = %v", p.PrevKv)
	}
	old := must(c.Get(ctx, "a", client.WithRev(aRev)))
	if string(old.Kvs[0].Value) != "v-a" {
		t.Errorf("get at rev %d = %q", aRev, old.Kvs[0].Value)
	}
	d := must(c.Delete(ctx, "b/", client.WithPrefix(), client.WithPrevKV()))
	if d.Deleted != 3 || len(d.PrevKvs) != 3 {
		t.Errorf("delete prefix: deleted %d, prev %d", d.Deleted, len(d.PrevKvs))
	}
	check("after delete", must(c.Get(ctx, "", client.WithPrefix())), "a,c")
}

func TestPutLeaseOptions(t *testing.T) {
	c, ctx := newMemberClient(t)
	l := must(c.Grant(ctx, 60))
	must(c.Put(ctx, "k", "v1", client.WithLease(l.ID)))
	must(c.Put(ctx, "k", "", client.WithIgnoreValue(), client.WithIgnoreLease()))
	if r := must(c.Get(ctx, "k")); string(r.Kvs[0].Value) != "v1" {
		t.Errorf("ignore value: value %q, want v1", r.Kvs[0].Value)
	}
	must(c.Put(ctx, "k", "v2", client.WithIgnoreLease()))
	r := must(c.Get(ctx, "k"))
	if kv := r.Kvs[0]; string(kv.Value) != "v2" || client.LeaseID(kv.Lease) != l.ID || kv.Version != 3 {
		t.Errorf("kv = %v, want value v2, lease %x, version 3", kv, l.ID)
	}
	if _, err := c.Put(ctx, "missing", "", client.WithIgnoreValue()); !errors.Is(err, rpctypes.ErrKeyNotFound) {
		t.Errorf("ignore value on a missing key: %v, want ErrKeyNotFound", err)
	}
}

func TestCompact(t *testing.T) {
	c, ctx := newMemberClient(t)
	first := must(c.Put(ctx, "k", "1")).Header.Revision
	last := must(c.Put(ctx, "k", "2")).Header.Revision
	must(c.Compact(ctx, last, client.WithCompactPhysical()))
	if _, err := c.Get(ctx, "k", client.WithRev(first)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("get compacted revision: %v, want ErrCompacted", err)
	}
	if _, err := c.Compact(ctx, first); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("compact again: %v, want ErrCompacted", err)
	}
}

func TestDo(t *testing.T) {
	c, ctx := newMemberClient(t)
	if r := must(c.Do(ctx, client.OpPut("k", "v"))); r.Put() == nil {
		t.Error("Do(put) has no put response")
	}
	if r := must(c.Do(ctx, client.OpGet("k"))); r.Get() == nil || r.Get().Count != 1 {
		t.Errorf("Do(get) = %v", r.Get())
	}
	if r := must(c.Do(ctx, client.OpDelete("k"))); r.Del() == nil || r.Del().Deleted != 1 {
		t.Errorf("Do(delete) = %v", r.Del())
	}
}
