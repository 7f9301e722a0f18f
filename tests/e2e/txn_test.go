package e2e

import (
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestTxnCompare(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	create := mustPut(t, cli, "k", "v0")
	mod := mustPut(t, cli, "k", "v1") // k: value v1, version 2, create rev `create`, mod rev `mod`
	mustPut(t, cli, "r/1", "same")
	mustPut(t, cli, "r/2", "same")
	mustPut(t, cli, "q/1", "same")
	mustPut(t, cli, "q/2", "diff")

	type tc struct {
		name string
		cmps []clientv3.Cmp
		want bool
	}
	tests := []tc{
		{"value = ", []clientv3.Cmp{clientv3.Compare(clientv3.Value("k"), "=", "v1")}, true},
		{"value = other", []clientv3.Cmp{clientv3.Compare(clientv3.Value("k"), "=", "v0")}, false},
		{"value !=", []clientv3.Cmp{clientv3.Compare(clientv3.Value("k"), "!=", "v0")}, true},
		{"value > ", []clientv3.Cmp{clientv3.Compare(clientv3.Value("k"), ">", "v0")}, true},
		{"value > equal", []clientv3.Cmp{clientv3.Compare(clientv3.Value("k"), ">", "v1")}, false},
		{"value <", []clientv3.Cmp{clientv3.Compare(clientv3.Value("k"), "<", "v2")}, true},
		{"value < smaller", []clientv3.Cmp{clientv3.Compare(clientv3.Value("k"), "<", "v0")}, false},
		// A value compare against a missing key is always false, != included.
		{"value = on missing key", []clientv3.Cmp{clientv3.Compare(clientv3.Value("missing"), "=", "")}, false},
		{"value != on missing key", []clientv3.Cmp{clientv3.Compare(clientv3.Value("missing"), "!=", "x")}, false},
		{"version =", []clientv3.Cmp{clientv3.Compare(clientv3.Version("k"), "=", 2)}, true},
		{"version !=", []clientv3.Cmp{clientv3.Compare(clientv3.Version("k"), "!=", 2)}, false},
		{"version >", []clientv3.Cmp{clientv3.Compare(clientv3.Version("k"), ">", 1)}, true},
		{"version <", []clientv3.Cmp{clientv3.Compare(clientv3.Version("k"), "<", 2)}, false},
		{"version of missing key is 0", []clientv3.Cmp{clientv3.Compare(clientv3.Version("missing"), "=", 0)}, true},
		{"create =", []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision("k"), "=", create)}, true},
		{"create <", []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision("k"), "<", mod)}, true},
		{"create >", []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision("k"), ">", create)}, false},
		{"create != ", []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision("k"), "!=", create)}, false},
		{"create of missing key is 0", []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision("missing"), "=", 0)}, true},
		{"mod =", []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision("k"), "=", mod)}, true},
		{"mod >", []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision("k"), ">", create)}, true},
		{"mod <", []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision("k"), "<", mod)}, false},
		{"mod !=", []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision("k"), "!=", create)}, true},
		{"lease =", []clientv3.Cmp{clientv3.Compare(clientv3.LeaseValue("k"), "=", 0)}, true},
		{"lease !=", []clientv3.Cmp{clientv3.Compare(clientv3.LeaseValue("k"), "!=", 0)}, false},
		{"lease >", []clientv3.Cmp{clientv3.Compare(clientv3.LeaseValue("k"), ">", 0)}, false},
		{"lease <", []clientv3.Cmp{clientv3.Compare(clientv3.LeaseValue("k"), "<", 1)}, true},
		{"lease of missing key is 0", []clientv3.Cmp{clientv3.Compare(clientv3.LeaseValue("missing"), "=", 0)}, true},
		{"conjunction all true", []clientv3.Cmp{
			clientv3.Compare(clientv3.Value("k"), "=", "v1"),
			clientv3.Compare(clientv3.Version("k"), "=", 2),
		}, true},
		{"conjunction one false", []clientv3.Cmp{
			clientv3.Compare(clientv3.Value("k"), "=", "v1"),
			clientv3.Compare(clientv3.Version("k"), "=", 3),
		}, false},
		{"range: all values equal", []clientv3.Cmp{clientv3.Compare(clientv3.Value("r/"), "=", "same").WithPrefix()}, true},
		{"range: one value differs", []clientv3.Cmp{clientv3.Compare(clientv3.Value("q/"), "=", "same").WithPrefix()}, false},
		{"range: explicit end", []clientv3.Cmp{clientv3.Compare(clientv3.Value("q/1"), "=", "same").WithRange("q/2")}, true},
		{"range: versions", []clientv3.Cmp{clientv3.Compare(clientv3.Version("r/"), ">", 0).WithPrefix()}, true},
		{"range: mod revisions below", []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision("r/"), "<", mod).WithPrefix()}, false},
		{"empty range: value is false", []clientv3.Cmp{clientv3.Compare(clientv3.Value("none/"), "!=", "x").WithPrefix()}, false},
		{"empty range: version is 0", []clientv3.Cmp{clientv3.Compare(clientv3.Version("none/"), "=", 0).WithPrefix()}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := currentRev(t, cli)
			resp, err := cli.Txn(ctx(t)).If(tt.cmps...).
				Then(clientv3.OpGet("k")).
				Else(clientv3.OpGet("r/", clientv3.WithPrefix())).Commit()
			must(t, err)
			if resp.Succeeded != tt.want {
				t.Fatalf("succeeded = %v, want %v", resp.Succeeded, tt.want)
			}
			if len(resp.Responses) != 1 {
				t.Fatalf("%d responses, want 1", len(resp.Responses))
			}
			wantCount := int64(2) // else branch: r/1, r/2
			if tt.want {
				wantCount = 1
			}
			if got := resp.Responses[0].GetResponseRange().GetCount(); got != wantCount {
				t.Errorf("branch range count = %d, want %d", got, wantCount)
			}
			if resp.Header.Revision != before {
				t.Errorf("read-only txn moved revision %d -> %d", before, resp.Header.Revision)
			}
		})
	}
	t.Run("empty compare key", func(t *testing.T) {
		_, err := cli.Txn(ctx(t)).If(clientv3.Compare(clientv3.Value(""), "=", "x")).Commit()
		wantErr(t, err, rpctypes.ErrEmptyKey)
	})
}

func TestTxnWrites(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	base := mustPut(t, cli, "n", "orig")

	t.Run("then branch writes at one revision", func(t *testing.T) {
		resp, err := cli.Txn(ctx(t)).If(clientv3.Compare(clientv3.Value("n"), "=", "orig")).
			Then(clientv3.OpPut("t1", "a"), clientv3.OpPut("t2", "b"), clientv3.OpGet("t1")).
			Else(clientv3.OpPut("e", "x")).Commit()
		must(t, err)
		if !resp.Succeeded || resp.Header.Revision != base+1 {
			t.Fatalf("succeeded=%v revision=%d, want true %d", resp.Succeeded, resp.Header.Revision, base+1)
		}
		for _, k := range []string{"t1", "t2"} {
			g, err := cli.Get(ctx(t), k)
			must(t, err)
			if len(g.Kvs) != 1 || g.Kvs[0].ModRevision != base+1 {
				t.Errorf("%s: %v, want mod revision %d", k, g.Kvs, base+1)
			}
		}
		// A range after a put in the same txn sees the put.
		if r := resp.Responses[2].GetResponseRange(); kvPairs(r.GetKvs()) != "t1=a" {
			t.Errorf("range inside txn = %q, want t1=a", kvPairs(r.GetKvs()))
		}
		base++
	})
	t.Run("else branch", func(t *testing.T) {
		resp, err := cli.Txn(ctx(t)).If(clientv3.Compare(clientv3.Value("n"), "=", "nope")).
			Then(clientv3.OpPut("t3", "a")).
			Else(clientv3.OpPut("e", "x"), clientv3.OpDelete("t2", clientv3.WithPrevKV())).Commit()
		must(t, err)
		if resp.Succeeded || resp.Header.Revision != base+1 {
			t.Fatalf("succeeded=%v revision=%d, want false %d", resp.Succeeded, resp.Header.Revision, base+1)
		}
		if d := resp.Responses[1].GetResponseDeleteRange(); d.GetDeleted() != 1 || kvPairs(d.GetPrevKvs()) != "t2=b" {
			t.Errorf("delete in else: %v", d)
		}
		base++
	})
	t.Run("txn changing nothing keeps the revision", func(t *testing.T) {
		resp, err := cli.Txn(ctx(t)).If(clientv3.Compare(clientv3.Value("n"), "=", "nope")).
			Then(clientv3.OpPut("t3", "a")).
			Else(clientv3.OpDelete("missing"), clientv3.OpGet("n")).Commit()
		must(t, err)
		if resp.Header.Revision != base {
			t.Errorf("revision = %d, want %d", resp.Header.Revision, base)
		}
		if rev := currentRev(t, cli); rev != base {
			t.Errorf("store revision = %d, want %d", rev, base)
		}
	})
	t.Run("no-op delete before a put reports the old revision", func(t *testing.T) {
		resp, err := cli.Txn(ctx(t)).Then(clientv3.OpDelete("missing"), clientv3.OpPut("t4", "x")).Commit()
		must(t, err)
		if resp.Header.Revision != base+1 {
			t.Errorf("txn revision = %d, want %d", resp.Header.Revision, base+1)
		}
		if r := resp.Responses[0].GetResponseDeleteRange().GetHeader().GetRevision(); r != base {
			t.Errorf("no-op delete revision = %d, want %d (old)", r, base)
		}
		if r := resp.Responses[1].GetResponsePut().GetHeader().GetRevision(); r != base+1 {
			t.Errorf("put revision = %d, want %d (new)", r, base+1)
		}
		base++
	})
	t.Run("nested txn compares see the pre-txn state", func(t *testing.T) {
		inner := clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.Value("n"), "=", "orig")},
			[]clientv3.Op{clientv3.OpPut("n2", "inner-then")},
			[]clientv3.Op{clientv3.OpPut("n2", "inner-else")},
		)
		resp, err := cli.Txn(ctx(t)).Then(clientv3.OpPut("n", "outer"), inner).Commit()
		must(t, err)
		if !resp.Succeeded || !resp.Responses[1].GetResponseTxn().GetSucceeded() {
			t.Errorf("nested txn should succeed: %v", resp)
		}
		g, err := cli.Get(ctx(t), "n", clientv3.WithRange("n3"))
		must(t, err)
		if got := kvPairs(g.Kvs); got != "n=outer,n2=inner-then" {
			t.Errorf("after nested txn: %q, want n=outer,n2=inner-then", got)
		}
		if g.Header.Revision != base+1 {
			t.Errorf("revision = %d, want %d", g.Header.Revision, base+1)
		}
	})

	dups := []struct {
		name string
		ops  []clientv3.Op
		els  []clientv3.Op
		ok   bool
	}{
		{"two puts same key", []clientv3.Op{clientv3.OpPut("d", "1"), clientv3.OpPut("d", "2")}, nil, false},
		{"put and delete same key", []clientv3.Op{clientv3.OpPut("d", "1"), clientv3.OpDelete("d")}, nil, false},
		{"put inside deleted range", []clientv3.Op{clientv3.OpDelete("d/", clientv3.WithPrefix()), clientv3.OpPut("d/x", "1")}, nil, false},
		{"put in outer and nested", []clientv3.Op{clientv3.OpPut("d", "1"), clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpPut("d", "2")}, nil)}, nil, false},
		{"two deletes same key are fine", []clientv3.Op{clientv3.OpDelete("d"), clientv3.OpDelete("d")}, nil, true},
		{"same key in then and else is fine", []clientv3.Op{clientv3.OpPut("d", "1")}, []clientv3.Op{clientv3.OpPut("d", "2")}, true},
		{"get and put same key is fine", []clientv3.Op{clientv3.OpGet("d"), clientv3.OpPut("d", "1")}, nil, true},
	}
	for _, tt := range dups {
		t.Run("duplicate/"+tt.name, func(t *testing.T) {
			before := currentRev(t, cli)
			_, err := cli.Txn(ctx(t)).Then(tt.ops...).Else(tt.els...).Commit()
			if tt.ok {
				must(t, err)
				return
			}
			wantErr(t, err, rpctypes.ErrDuplicateKey)
			if after := currentRev(t, cli); after != before {
				t.Errorf("rejected txn moved the revision %d -> %d", before, after)
			}
		})
	}
}

func TestTxnMaxOps(t *testing.T) {
	m := startMember(t, memberOpts{args: []string{"--max-txn-ops", "3"}})
	cli := m.client(t)
	put := func(k string) clientv3.Op { return clientv3.OpPut(k, "v") }
	cmp := func(k string) clientv3.Cmp { return clientv3.Compare(clientv3.Version(k), ">", -1) }
	tests := []struct {
		name string
		cmps []clientv3.Cmp
		then []clientv3.Op
		els  []clientv3.Op
		ok   bool
	}{
		{"3 ops", nil, []clientv3.Op{put("a"), put("b"), put("c")}, nil, true},
		{"4 ops in then", nil, []clientv3.Op{put("a"), put("b"), put("c"), put("d")}, nil, false},
		{"4 ops in else", nil, nil, []clientv3.Op{put("a"), put("b"), put("c"), put("d")}, false},
		{"4 compares", []clientv3.Cmp{cmp("a"), cmp("b"), cmp("c"), cmp("d")}, nil, nil, false},
		{"3 compares, 3 then, 3 else", []clientv3.Cmp{cmp("a"), cmp("b"), cmp("c")},
			[]clientv3.Op{put("a"), put("b"), put("c")}, []clientv3.Op{put("a"), put("b"), put("c")}, true},
		{"nested gets what the outer level leaves", nil,
			[]clientv3.Op{clientv3.OpTxn(nil, []clientv3.Op{put("a"), put("b")}, nil)}, nil, true},
		{"nested exceeding the remainder", nil,
			[]clientv3.Op{put("x"), clientv3.OpTxn(nil, []clientv3.Op{put("a"), put("b")}, nil)}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cli.Txn(ctx(t)).If(tt.cmps...).Then(tt.then...).Else(tt.els...).Commit()
			if tt.ok {
				must(t, err)
			} else {
				wantErr(t, err, rpctypes.ErrTooManyOps)
			}
		})
	}
}
