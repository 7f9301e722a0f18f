package client

import (
	"testing"
)

func TestTxn(t *testing.T) {
	c := newClient(t, startMember(t).url)
	ctx := testCtx(t)
	put := must(c.Put(ctx, "k", "v"))
	rev := put.Header.Revision
	l := must(c.Grant(ctx, 60))
	must(c.Put(ctx, "leased", "x", WithLease(l.ID)))

	holds := []Cmp{
		Compare(Value("k"), "=", "v"),
		Compare(Value("k"), "!=", "w"),
		Compare(Version("k"), "=", 1),
		Compare(Version("missing"), "=", 0),
		Compare(CreateRevision("k"), "=", rev),
		Compare(ModRevision("k"), "<", rev+1),
		Compare(ModRevision("k"), ">", int64(0)),
		Compare(LeaseValue("leased"), "=", l.ID),
		Compare(LeaseValue("k"), "=", NoLease),
		Compare(Version("k").WithPrefix(), ">", 0),
		Compare(Version("a").WithRange("z"), ">", 0),
	}
	for i, cmp := range holds {
		r := must(c.Txn(ctx).If(cmp).Commit())
		if !r.Succeeded {
			t.Errorf("comparison %d does not hold", i)
		}
	}
	r := must(c.Txn(ctx).
		If(Compare(Value("k"), "=", "other")).
		Then(OpPut("k", "then")).
		Else(OpPut("k", "else"), OpGet("k"), OpTxn(nil, []Op{OpDelete("leased")}, nil)).
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
	c := newClient(t, startMember(t).url)
	for name, f := range map[string]func(){
		"if twice":      func() { c.Txn(t.Context()).If().If() },
		"if after then": func() { c.Txn(t.Context()).Then().If() },
		"then twice":    func() { c.Txn(t.Context()).Then().Then() },
		"else twice":    func() { c.Txn(t.Context()).Else().Else() },
		"bad operator":  func() { Compare(Value("k"), "~", "v") },
		"bad value":     func() { Compare(Value("k"), "=", 1) },
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

func TestReadOnlyTxnIsRepeatable(t *testing.T) {
	ro := OpTxn(nil, []Op{OpGet("a")}, []Op{OpTxn(nil, []Op{OpGet("b")}, nil)})
	rw := OpTxn(nil, []Op{OpGet("a")}, []Op{OpTxn(nil, []Op{OpPut("b", "")}, nil)})
	if !ro.readOnly() || rw.readOnly() {
		t.Errorf("readOnly: read-only txn %v, writing txn %v", ro.readOnly(), rw.readOnly())
	}
}

// TestTxnPartOrder checks the builder's order rule without a server: each
// part at most once, If before Then before Else, any of them may be left out.
func TestTxnPartOrder(t *testing.T) {
	tests := []struct {
		calls string // i, t, e for If, Then, Else
		panic string // "" for a legal order
	}{
		{"ite", ""}, {"ie", ""}, {"te", ""}, {"e", ""}, {"", ""},
		{"ii", "client: Txn.If called twice"},
		{"tt", "client: Txn.Then called twice"},
		{"ee", "client: Txn.Else called twice"},
		{"ti", "client: Txn.If called after Then"},
		{"ei", "client: Txn.If called after Else"},
		{"iet", "client: Txn.Then called after Else"},
	}
	for _, tt := range tests {
		got := func() (msg string) {
			defer func() {
				if r := recover(); r != nil {
					msg = r.(string)
				}
			}()
			var b Txn = &txn{}
			for _, c := range tt.calls {
				switch c {
				case 'i':
					b = b.If()
				case 't':
					b = b.Then()
				case 'e':
					b = b.Else()
				}
			}
			return ""
		}()
		if got != tt.panic {
			t.Errorf("%q: panic %q, want %q", tt.calls, got, tt.panic)
		}
	}
}
