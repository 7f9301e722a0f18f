package e2e

import (
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
)

// seedRangeKeys writes a fixed history on a fresh member (revision 1):
//
//	rev 2 a=va, 3 b=vb, 4 c=vc, 5 foo=1, 6 foo/bar=2, 7 foo/baz=3, 8 fop=4, 9 b=vb2
func seedRangeKeys(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	puts := [][2]string{{"a", "va"}, {"b", "vb"}, {"c", "vc"}, {"foo", "1"}, {"foo/bar", "2"}, {"foo/baz", "3"}, {"fop", "4"}, {"b", "vb2"}}
	for i, p := range puts {
		if rev := mustPut(t, cli, p[0], p[1]); rev != int64(i+2) {
			t.Fatalf("put %s: revision %d, want %d (a fresh store starts at revision 1)", p[0], rev, i+2)
		}
	}
}

func TestKVRange(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	seedRangeKeys(t, cli)

	const all = "a=va,b=vb2,c=vc,foo=1,foo/bar=2,foo/baz=3,fop=4"
	tests := []struct {
		name      string
		key       string
		opts      []clientv3.OpOption
		wantKVs   string
		wantCount int64
		wantMore  bool
	}{
		{name: "single key", key: "a", wantKVs: "a=va", wantCount: 1},
		{name: "missing key", key: "zz", wantKVs: "", wantCount: 0},
		{name: "range [b,foo)", key: "b", opts: []clientv3.OpOption{clientv3.WithRange("foo")}, wantKVs: "b=vb2,c=vc", wantCount: 2},
		{name: "prefix foo", key: "foo", opts: []clientv3.OpOption{clientv3.WithPrefix()}, wantKVs: "foo=1,foo/bar=2,foo/baz=3", wantCount: 3},
		{name: "from key foo/", key: "foo/", opts: []clientv3.OpOption{clientv3.WithFromKey()}, wantKVs: "foo/bar=2,foo/baz=3,fop=4", wantCount: 3},
		{name: "all keys via \\x00 from key", key: "\x00", opts: []clientv3.OpOption{clientv3.WithFromKey()}, wantKVs: all, wantCount: 7},
		{name: "all keys via empty prefix", key: "", opts: []clientv3.OpOption{clientv3.WithPrefix()}, wantKVs: all, wantCount: 7},
		{name: "limit 2", key: "\x00", opts: []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithLimit(2)}, wantKVs: "a=va,b=vb2", wantCount: 7, wantMore: true},
		{name: "limit equal to count", key: "\x00", opts: []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithLimit(7)}, wantKVs: all, wantCount: 7},
		{name: "historical rev 4", key: "\x00", opts: []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithRev(4)}, wantKVs: "a=va,b=vb,c=vc", wantCount: 3},
		{name: "historical rev 1 is empty", key: "\x00", opts: []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithRev(1)}, wantKVs: "", wantCount: 0},
		{name: "serializable", key: "b", opts: []clientv3.OpOption{clientv3.WithSerializable()}, wantKVs: "b=vb2", wantCount: 1},
		{name: "keys only", key: "foo", opts: []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly()}, wantKVs: "foo,foo/bar,foo/baz", wantCount: 3},
		{name: "count only", key: "\x00", opts: []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithCountOnly()}, wantKVs: "", wantCount: 7},
		// Count ignores the revision filters; limit and more apply after filtering.
		{name: "min mod rev 5", key: "\x00", opts: []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithMinModRev(5)}, wantKVs: "b=vb2,foo=1,foo/bar=2,foo/baz=3,fop=4", wantCount: 7},
		{name: "max mod rev 4", key: "\x00", opts: []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithMaxModRev(4)}, wantKVs: "a=va,c=vc", wantCount: 7},
		{name: "min create rev 6", key: "\x00", opts: []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithMinCreateRev(6)}, wantKVs: "foo/bar=2,foo/baz=3,fop=4", wantCount: 7},
		{name: "max create rev 3", key: "\x00", opts: []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithMaxCreateRev(3)}, wantKVs: "a=va,b=vb2", wantCount: 7},
		{name: "min mod rev 5 limit 2", key: "\x00", opts: []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithMinModRev(5), clientv3.WithLimit(2)}, wantKVs: "b=vb2,foo=1", wantCount: 7, wantMore: true},
		{name: "filters exclude all", key: "\x00", opts: []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithMinCreateRev(100)}, wantKVs: "", wantCount: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := cli.Get(ctx(t), tt.key, tt.opts...)
			must(t, err)
			if got := kvPairs(resp.Kvs); got != tt.wantKVs {
				t.Errorf("kvs = %q, want %q", got, tt.wantKVs)
			}
			if resp.Count != tt.wantCount {
				t.Errorf("count = %d, want %d", resp.Count, tt.wantCount)
			}
			if resp.More != tt.wantMore {
				t.Errorf("more = %v, want %v", resp.More, tt.wantMore)
			}
			if resp.Header.Revision != 9 {
				t.Errorf("header revision = %d, want 9", resp.Header.Revision)
			}
		})
	}

	t.Run("metadata", func(t *testing.T) {
		resp, err := cli.Get(ctx(t), "b")
		must(t, err)
		kv := resp.Kvs[0]
		if kv.CreateRevision != 3 || kv.ModRevision != 9 || kv.Version != 2 || kv.Lease != 0 {
			t.Errorf("b: create=%d mod=%d version=%d lease=%d, want 3 9 2 0", kv.CreateRevision, kv.ModRevision, kv.Version, kv.Lease)
		}
	})
	t.Run("empty key", func(t *testing.T) {
		_, err := cli.Get(ctx(t), "")
		wantErr(t, err, rpctypes.ErrEmptyKey)
	})
	t.Run("future revision", func(t *testing.T) {
		_, err := cli.Get(ctx(t), "a", clientv3.WithRev(10))
		wantErr(t, err, rpctypes.ErrFutureRev)
	})
}

func TestKVSort(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	// Final state (relative revisions r1..r6):
	//   s/a value "3" version 1 create r2 mod r2
	//   s/b value "1" version 3 create r3 mod r6
	//   s/c value "2" version 2 create r1 mod r5
	for _, p := range [][2]string{{"s/c", "2"}, {"s/a", "3"}, {"s/b", "0"}, {"s/b", "1"}, {"s/c", "2"}, {"s/b", "1"}} {
		mustPut(t, cli, p[0], p[1])
	}
	targets := []struct {
		name   string
		target clientv3.SortTarget
		ascend string
	}{
		{"key", clientv3.SortByKey, "s/a,s/b,s/c"},
		{"version", clientv3.SortByVersion, "s/a,s/c,s/b"},
		{"create", clientv3.SortByCreateRevision, "s/c,s/a,s/b"},
		{"mod", clientv3.SortByModRevision, "s/a,s/c,s/b"},
		{"value", clientv3.SortByValue, "s/b,s/c,s/a"},
	}
	orders := []struct {
		name  string
		order clientv3.SortOrder
	}{{"none", clientv3.SortNone}, {"ascend", clientv3.SortAscend}, {"descend", clientv3.SortDescend}}
	for _, tg := range targets {
		for _, o := range orders {
			t.Run(tg.name+"/"+o.name, func(t *testing.T) {
				want := tg.ascend // NONE sorts ascending for every target (by key for KEY).
				if o.order == clientv3.SortDescend {
					want = reverseList(tg.ascend)
				}
				resp, err := cli.Get(ctx(t), "s/", clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithSort(tg.target, o.order))
				must(t, err)
				if got := kvPairs(resp.Kvs); got != want {
					t.Errorf("order = %q, want %q", got, want)
				}
				if resp.Count != 3 || resp.More {
					t.Errorf("count=%d more=%v, want 3 false", resp.Count, resp.More)
				}
			})
		}
	}
	t.Run("value descend limit 1", func(t *testing.T) {
		resp, err := cli.Get(ctx(t), "s/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByValue, clientv3.SortDescend), clientv3.WithLimit(1))
		must(t, err)
		if got := kvPairs(resp.Kvs); got != "s/a=3" || resp.Count != 3 || !resp.More {
			t.Errorf("got kvs=%q count=%d more=%v, want s/a=3 3 true", got, resp.Count, resp.More)
		}
	})
}

func reverseList(s string) string {
	parts := strings.Split(s, ",")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ",")
}

func TestKVRangeStream(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	seedRangeKeys(t, cli)
	// Enough data that a server chunking its answer has a reason to.
	big := strings.Repeat("x", 1024)
	for i := range 300 {
		mustPut(t, cli, fmt.Sprintf("z/%04d", i), big)
	}
	rev := currentRev(t, cli)

	tests := []struct {
		name string
		key  string
		opts []clientv3.OpOption
	}{
		{"single", "a", nil},
		{"prefix", "foo", []clientv3.OpOption{clientv3.WithPrefix()}},
		{"all", "\x00", []clientv3.OpOption{clientv3.WithFromKey()}},
		{"large prefix", "z/", []clientv3.OpOption{clientv3.WithPrefix()}},
		{"limit", "z/", []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithLimit(10)}},
		{"historical", "\x00", []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithRev(5)}},
		{"keys only", "z/", []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly()}},
		{"count only", "z/", []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()}},
		{"serializable", "\x00", []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithSerializable()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := cli.Get(ctx(t), tt.key, tt.opts...)
			must(t, err)
			ch, err := cli.GetStream(ctx(t), tt.key, tt.opts...)
			must(t, err)
			got, err := clientv3.GetStreamToGetResponse(ch)
			must(t, err)
			if kvPairs(got.Kvs) != kvPairs(want.Kvs) {
				t.Errorf("stream kvs differ from Range: %d vs %d kvs", len(got.Kvs), len(want.Kvs))
			}
			if got.Count != want.Count || got.More != want.More {
				t.Errorf("stream count=%d more=%v, Range count=%d more=%v", got.Count, got.More, want.Count, want.More)
			}
			if got.Header == nil || got.Header.Revision != rev {
				t.Errorf("stream header = %v, want revision %d", got.Header, rev)
			}
		})
	}

	t.Run("header only on last chunk", func(t *testing.T) {
		ch, err := cli.GetStream(ctx(t), "z/", clientv3.WithPrefix())
		must(t, err)
		var chunks []clientv3.RangeStreamResponse
		for r := range ch {
			must(t, r.Err())
			chunks = append(chunks, r)
		}
		if len(chunks) == 0 {
			t.Fatal("no chunks")
		}
		n := 0
		for i, c := range chunks {
			n += len(c.Kvs)
			last := i == len(chunks)-1
			if !last && (c.Header != nil || c.Count != 0 || c.More) {
				t.Errorf("chunk %d of %d has header/count/more set", i, len(chunks))
			}
			if last && (c.Header == nil || c.Count != 300) {
				t.Errorf("last chunk: header=%v count=%d, want header and count 300", c.Header, c.Count)
			}
		}
		if n != 300 {
			t.Errorf("chunks carry %d kvs, want 300", n)
		}
	})

	unimplemented := []struct {
		name string
		opts []clientv3.OpOption
	}{
		{"sort key descend", []clientv3.OpOption{clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend)}},
		{"sort value ascend", []clientv3.OpOption{clientv3.WithSort(clientv3.SortByValue, clientv3.SortAscend)}},
		{"min mod rev", []clientv3.OpOption{clientv3.WithMinModRev(2)}},
		{"max mod rev", []clientv3.OpOption{clientv3.WithMaxModRev(100)}},
		{"min create rev", []clientv3.OpOption{clientv3.WithMinCreateRev(2)}},
		{"max create rev", []clientv3.OpOption{clientv3.WithMaxCreateRev(100)}},
	}
	for _, tt := range unimplemented {
		t.Run("unimplemented/"+tt.name, func(t *testing.T) {
			opts := append([]clientv3.OpOption{clientv3.WithPrefix()}, tt.opts...)
			ch, err := cli.GetStream(ctx(t), "z/", opts...)
			if err == nil {
				_, err = clientv3.GetStreamToGetResponse(ch)
			}
			wantCode(t, err, codes.Unimplemented)
		})
	}
	t.Run("compacted", func(t *testing.T) {
		_, err := cli.Compact(ctx(t), 6)
		must(t, err)
		ch, err := cli.GetStream(ctx(t), "\x00", clientv3.WithFromKey(), clientv3.WithRev(5))
		if err == nil {
			_, err = clientv3.GetStreamToGetResponse(ch)
		}
		wantErr(t, err, rpctypes.ErrCompacted)
	})
}

func TestKVPut(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)

	resp, err := cli.Put(ctx(t), "p", "v1", clientv3.WithPrevKV())
	must(t, err)
	if resp.PrevKv != nil {
		t.Errorf("first put: prev kv = %v, want none", resp.PrevKv)
	}
	r1 := resp.Header.Revision

	resp, err = cli.Put(ctx(t), "p", "v2", clientv3.WithPrevKV())
	must(t, err)
	if resp.PrevKv == nil || string(resp.PrevKv.Value) != "v1" || resp.PrevKv.ModRevision != r1 || resp.PrevKv.Version != 1 {
		t.Errorf("second put: prev kv = %v, want v1 at mod rev %d version 1", resp.PrevKv, r1)
	}
	if resp.Header.Revision != r1+1 {
		t.Errorf("revision = %d, want %d", resp.Header.Revision, r1+1)
	}

	resp, err = cli.Put(ctx(t), "p", "", clientv3.WithIgnoreValue())
	must(t, err)
	g, err := cli.Get(ctx(t), "p")
	must(t, err)
	if kv := g.Kvs[0]; string(kv.Value) != "v2" || kv.Version != 3 || kv.ModRevision != resp.Header.Revision {
		t.Errorf("after ignore-value put: %v, want value v2 version 3 mod %d", kv, resp.Header.Revision)
	}

	_, err = cli.Put(ctx(t), "p", "v3", clientv3.WithIgnoreLease())
	must(t, err)
	g, err = cli.Get(ctx(t), "p")
	must(t, err)
	if string(g.Kvs[0].Value) != "v3" || g.Kvs[0].Lease != 0 {
		t.Errorf("after ignore-lease put: %v", g.Kvs[0])
	}

	errCases := []struct {
		name string
		key  string
		val  string
		opts []clientv3.OpOption
		want error
	}{
		{"ignore value on missing key", "missing", "", []clientv3.OpOption{clientv3.WithIgnoreValue()}, rpctypes.ErrKeyNotFound},
		{"ignore lease on missing key", "missing", "x", []clientv3.OpOption{clientv3.WithIgnoreLease()}, rpctypes.ErrKeyNotFound},
		{"ignore value with a value", "p", "x", []clientv3.OpOption{clientv3.WithIgnoreValue()}, rpctypes.ErrValueProvided},
		{"ignore lease with a lease", "p", "x", []clientv3.OpOption{clientv3.WithIgnoreLease(), clientv3.WithLease(5)}, rpctypes.ErrLeaseProvided},
		{"nonexistent lease", "p", "x", []clientv3.OpOption{clientv3.WithLease(0x1234)}, rpctypes.ErrLeaseNotFound},
		{"empty key", "", "x", nil, rpctypes.ErrEmptyKey},
	}
	for _, tt := range errCases {
		t.Run(tt.name, func(t *testing.T) {
			before := currentRev(t, cli)
			_, err := cli.Put(ctx(t), tt.key, tt.val, tt.opts...)
			wantErr(t, err, tt.want)
			if after := currentRev(t, cli); after != before {
				t.Errorf("failed put moved the revision from %d to %d", before, after)
			}
		})
	}
}

func TestKVDelete(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	seedRangeKeys(t, cli) // revision 9

	tests := []struct {
		name        string
		key         string
		opts        []clientv3.OpOption
		wantDeleted int64
		wantPrev    string
		wantRev     int64
		wantLeft    string
	}{
		{"missing key changes nothing", "zz", nil, 0, "", 9, "a,b,c,foo,foo/bar,foo/baz,fop"},
		{"single with prev kv", "a", []clientv3.OpOption{clientv3.WithPrevKV()}, 1, "a=va", 10, "b,c,foo,foo/bar,foo/baz,fop"},
		{"prefix", "foo/", []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV()}, 2, "foo/bar=2,foo/baz=3", 11, "b,c,foo,fop"},
		{"range without prev kv", "b", []clientv3.OpOption{clientv3.WithRange("foo")}, 2, "", 12, "foo,fop"},
		{"empty range changes nothing", "b", []clientv3.OpOption{clientv3.WithRange("foo")}, 0, "", 12, "foo,fop"},
		{"from key", "fo", []clientv3.OpOption{clientv3.WithFromKey()}, 2, "", 13, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := cli.Delete(ctx(t), tt.key, tt.opts...)
			must(t, err)
			if resp.Deleted != tt.wantDeleted {
				t.Errorf("deleted = %d, want %d", resp.Deleted, tt.wantDeleted)
			}
			if got := kvPairs(resp.PrevKvs); got != tt.wantPrev {
				t.Errorf("prev kvs = %q, want %q", got, tt.wantPrev)
			}
			if resp.Header.Revision != tt.wantRev {
				t.Errorf("revision = %d, want %d", resp.Header.Revision, tt.wantRev)
			}
			g, err := cli.Get(ctx(t), "\x00", clientv3.WithFromKey(), clientv3.WithKeysOnly())
			must(t, err)
			if got := kvPairs(g.Kvs); got != tt.wantLeft {
				t.Errorf("left = %q, want %q", got, tt.wantLeft)
			}
		})
	}
	t.Run("empty key", func(t *testing.T) {
		_, err := cli.Delete(ctx(t), "")
		wantErr(t, err, rpctypes.ErrEmptyKey)
	})
	t.Run("recreated key starts a new generation", func(t *testing.T) {
		rev := mustPut(t, cli, "a", "again")
		g, err := cli.Get(ctx(t), "a")
		must(t, err)
		if kv := g.Kvs[0]; kv.Version != 1 || kv.CreateRevision != rev {
			t.Errorf("recreated a: version=%d create=%d, want 1 %d", kv.Version, kv.CreateRevision, rev)
		}
	})
}

func TestKVCompact(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	seedRangeKeys(t, cli) // revision 9

	_, err := cli.Compact(ctx(t), 5)
	must(t, err)

	reads := []struct {
		name    string
		rev     int64
		want    string
		wantErr error
	}{
		{"below compaction", 4, "", rpctypes.ErrCompacted},
		{"at compaction", 5, "a=va,b=vb,c=vc,foo=1", nil},
		{"after compaction", 8, "a=va,b=vb,c=vc,foo=1,foo/bar=2,foo/baz=3,fop=4", nil},
		{"current", 9, "a=va,b=vb2,c=vc,foo=1,foo/bar=2,foo/baz=3,fop=4", nil},
		{"future", 10, "", rpctypes.ErrFutureRev},
	}
	for _, tt := range reads {
		t.Run("read/"+tt.name, func(t *testing.T) {
			resp, err := cli.Get(ctx(t), "\x00", clientv3.WithFromKey(), clientv3.WithRev(tt.rev))
			if tt.wantErr != nil {
				wantErr(t, err, tt.wantErr)
				return
			}
			must(t, err)
			if got := kvPairs(resp.Kvs); got != tt.want {
				t.Errorf("kvs = %q, want %q", got, tt.want)
			}
		})
	}

	compactions := []struct {
		name    string
		rev     int64
		opts    []clientv3.CompactOption
		wantErr error
	}{
		{"same revision again", 5, nil, rpctypes.ErrCompacted},
		{"older revision", 3, nil, rpctypes.ErrCompacted},
		{"future revision", 100, nil, rpctypes.ErrFutureRev},
		{"physical", 8, []clientv3.CompactOption{clientv3.WithCompactPhysical()}, nil},
		{"current revision", 9, nil, nil},
	}
	for _, tt := range compactions {
		t.Run("compact/"+tt.name, func(t *testing.T) {
			before := currentRev(t, cli)
			resp, err := cli.Compact(ctx(t), tt.rev, tt.opts...)
			if tt.wantErr != nil {
				wantErr(t, err, tt.wantErr)
				return
			}
			must(t, err)
			if resp.Header.Revision != before {
				t.Errorf("compaction header revision = %d, want %d (compaction does not bump the revision)", resp.Header.Revision, before)
			}
		})
	}
	t.Run("data intact after physical compaction", func(t *testing.T) {
		resp, err := cli.Get(ctx(t), "\x00", clientv3.WithFromKey())
		must(t, err)
		if got, want := kvPairs(resp.Kvs), "a=va,b=vb2,c=vc,foo=1,foo/bar=2,foo/baz=3,fop=4"; got != want {
			t.Errorf("kvs = %q, want %q", got, want)
		}
		_, err = cli.Get(ctx(t), "a", clientv3.WithRev(8))
		wantErr(t, err, rpctypes.ErrCompacted)
	})
}

func TestKVRequestTooLarge(t *testing.T) {
	m := startMember(t, memberOpts{args: []string{"--max-request-bytes", "1024"}})
	cli := m.client(t)
	mustPut(t, cli, "small", strings.Repeat("s", 100))
	_, err := cli.Put(ctx(t), "large", strings.Repeat("l", 4096))
	wantErr(t, err, rpctypes.ErrRequestTooLarge)
	g, err := cli.Get(ctx(t), "large")
	must(t, err)
	if len(g.Kvs) != 0 {
		t.Errorf("rejected put was stored")
	}
}

func TestKVResponseHeaders(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	put, err := cli.Put(ctx(t), "h", "1")
	must(t, err)
	get, err := cli.Get(ctx(t), "h")
	must(t, err)
	del, err := cli.Delete(ctx(t), "h")
	must(t, err)
	txn, err := cli.Txn(ctx(t)).Then(clientv3.OpPut("h", "2")).Commit()
	must(t, err)
	cmp, err := cli.Compact(ctx(t), 1)
	must(t, err)
	st, err := cli.Status(ctx(t), m.clientURL)
	must(t, err)

	h := put.Header
	if h.ClusterId == 0 || h.MemberId == 0 || h.RaftTerm == 0 {
		t.Fatalf("put header %v: cluster id, member id and raft term must be non-zero", h)
	}
	headers := []struct {
		name string
		rev  int64
		hdr  interface {
			GetClusterId() uint64
			GetMemberId() uint64
			GetRaftTerm() uint64
			GetRevision() int64
		}
	}{
		{"put", 2, put.Header}, {"get", 2, get.Header}, {"delete", 3, del.Header},
		{"txn", 4, txn.Header}, {"compact", 4, cmp.Header}, {"status", 4, st.Header},
	}
	for _, c := range headers {
		if c.hdr.GetClusterId() != h.ClusterId || c.hdr.GetMemberId() != h.MemberId || c.hdr.GetRaftTerm() != h.RaftTerm {
			t.Errorf("%s header %v differs from put header %v", c.name, c.hdr, h)
		}
		if c.hdr.GetRevision() != c.rev {
			t.Errorf("%s header revision = %d, want %d", c.name, c.hdr.GetRevision(), c.rev)
		}
	}
}
