package apply

import (
	"context"
	"errors"
	"slices"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/server/errs"
)

// rangeFixture writes four keys whose orders differ by every sort target:
//
//	key  create  mod  version  value
//	a    5       11   4        v2
//	b    2       10   3        v4
//	c    6       6    1        v1
//	d    3       4    2        v3
//
// and returns the env at revision 11.
func rangeFixture(t *testing.T) *testEnv {
	t.Helper()
	e := newEnv(t, Config{})
	writes := []struct{ key, value string }{
		{"b", "b1"}, // 2
		{"d", "d1"}, // 3
		{"d", "v3"}, // 4
		{"a", "a1"}, // 5
		{"c", "v1"}, // 6
		{"a", "a2"}, // 7
		{"b", "b2"}, // 8
		{"a", "a3"}, // 9
		{"b", "v4"}, // 10
		{"a", "v2"}, // 11
	}
	for _, w := range writes {
		e.put(t, w.key, w.value)
	}
	return e
}

func TestRangeSort(t *testing.T) {
	e := rangeFixture(t)
	asc := map[pb.RangeRequest_SortTarget][]string{
		pb.RangeRequest_KEY:     {"a", "b", "c", "d"},
		pb.RangeRequest_VERSION: {"c", "d", "b", "a"},
		pb.RangeRequest_CREATE:  {"b", "d", "a", "c"},
		pb.RangeRequest_MOD:     {"d", "c", "b", "a"},
		pb.RangeRequest_VALUE:   {"c", "a", "d", "b"},
	}
	targets := []pb.RangeRequest_SortTarget{
		pb.RangeRequest_KEY, pb.RangeRequest_VERSION, pb.RangeRequest_CREATE,
		pb.RangeRequest_MOD, pb.RangeRequest_VALUE,
	}
	orders := []pb.RangeRequest_SortOrder{pb.RangeRequest_NONE, pb.RangeRequest_ASCEND, pb.RangeRequest_DESCEND}
	for _, target := range targets {
		for _, order := range orders {
			t.Run(target.String()+"/"+order.String(), func(t *testing.T) {
				want := slices.Clone(asc[target])
				if order == pb.RangeRequest_DESCEND {
					slices.Reverse(want)
				}
				resp, err := e.a.Range(context.Background(), &pb.RangeRequest{
					Key: []byte("a"), RangeEnd: []byte("\x00"), SortTarget: target, SortOrder: order,
				})
				if err != nil {
					t.Fatal(err)
				}
				if got := keysOf(resp.Kvs); !slices.Equal(got, want) {
					t.Errorf("keys = %v, want %v", got, want)
				}
				if resp.Count != 4 || resp.More || resp.Header.Revision != 11 {
					t.Errorf("count %d more %v rev %d, want 4 false 11", resp.Count, resp.More, resp.Header.Revision)
				}
			})
		}
	}
}

func TestRangeFiltersLimitAndCount(t *testing.T) {
	e := rangeFixture(t)
	all := func(r *pb.RangeRequest) *pb.RangeRequest {
		r.Key, r.RangeEnd = []byte("a"), []byte("e")
		return r
	}
	tests := []struct {
		name     string
		req      *pb.RangeRequest
		want     []string
		wantMore bool
	}{
		{"min mod", all(&pb.RangeRequest{MinModRevision: 6}), []string{"a", "b", "c"}, false},
		{"max mod", all(&pb.RangeRequest{MaxModRevision: 6}), []string{"c", "d"}, false},
		{"min create", all(&pb.RangeRequest{MinCreateRevision: 3}), []string{"a", "c", "d"}, false},
		{"max create", all(&pb.RangeRequest{MaxCreateRevision: 3}), []string{"b", "d"}, false},
		{"mod window", all(&pb.RangeRequest{MinModRevision: 5, MaxModRevision: 10}), []string{"b", "c"}, false},
		{"create window", all(&pb.RangeRequest{MinCreateRevision: 3, MaxCreateRevision: 5}), []string{"a", "d"}, false},
		{"limit", all(&pb.RangeRequest{Limit: 2}), []string{"a", "b"}, true},
		{"limit equal to size", all(&pb.RangeRequest{Limit: 4}), []string{"a", "b", "c", "d"}, false},
		{"limit above size", all(&pb.RangeRequest{Limit: 10}), []string{"a", "b", "c", "d"}, false},
		{"negative limit is no limit", all(&pb.RangeRequest{Limit: -1}), []string{"a", "b", "c", "d"}, false},
		{"limit after filter", all(&pb.RangeRequest{MinModRevision: 6, Limit: 2}), []string{"a", "b"}, true},
		{"limit equal to filtered size", all(&pb.RangeRequest{MinModRevision: 6, Limit: 3}), []string{"a", "b", "c"}, false},
		{"limit after sort", all(&pb.RangeRequest{Limit: 2, SortTarget: pb.RangeRequest_MOD, SortOrder: pb.RangeRequest_DESCEND}), []string{"a", "b"}, true},
		{"key descending with limit", all(&pb.RangeRequest{Limit: 1, SortOrder: pb.RangeRequest_DESCEND}), []string{"d"}, true},
		// etcd reads limit+1 keys in key order when the order is NONE and
		// only then sorts by the target: a, b, c sorted by version.
		{"target with order none sorts the first limit+1 keys", all(&pb.RangeRequest{Limit: 2, SortTarget: pb.RangeRequest_VERSION}), []string{"c", "b"}, true},
		{"filter and sort", all(&pb.RangeRequest{MaxCreateRevision: 5, SortTarget: pb.RangeRequest_VALUE, SortOrder: pb.RangeRequest_DESCEND}), []string{"b", "d", "a"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := e.a.Range(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := keysOf(resp.Kvs); !slices.Equal(got, tt.want) {
				t.Errorf("keys = %v, want %v", got, tt.want)
			}
			if resp.More != tt.wantMore {
				t.Errorf("more = %v, want %v", resp.More, tt.wantMore)
			}
			if resp.Count != 4 {
				t.Errorf("count = %d, want 4 (filters and limit do not change it)", resp.Count)
			}
		})
	}
}

func TestRangeForms(t *testing.T) {
	e := newEnv(t, Config{})
	for _, k := range []string{"\x00", "a", "ab", "abc", "b", "c"} {
		e.put(t, k, "v-"+k)
	}
	tests := []struct {
		name     string
		key, end string
		want     []string
	}{
		{"single key", "ab", "", []string{"ab"}},
		{"missing single key", "zz", "", []string{}},
		{"half-open range", "a", "b", []string{"a", "ab", "abc"}},
		{"prefix", "ab", "ac", []string{"ab", "abc"}},
		{"from key", "ab", "\x00", []string{"ab", "abc", "b", "c"}},
		{"every key", "\x00", "\x00", []string{"\x00", "a", "ab", "abc", "b", "c"}},
		{"empty range", "b", "a", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &pb.RangeRequest{Key: []byte(tt.key)}
			if tt.end != "" {
				r.RangeEnd = []byte(tt.end)
			}
			resp, err := e.a.Range(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if got := keysOf(resp.Kvs); !slices.Equal(got, tt.want) {
				t.Errorf("keys = %q, want %q", got, tt.want)
			}
			if resp.Count != int64(len(tt.want)) {
				t.Errorf("count = %d, want %d", resp.Count, len(tt.want))
			}
		})
	}
}

func TestRangeKeysOnlyAndCountOnly(t *testing.T) {
	e := rangeFixture(t)
	resp, err := e.a.Range(context.Background(), &pb.RangeRequest{Key: []byte("a"), RangeEnd: []byte("c"), KeysOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 2 {
		t.Fatalf("kvs = %v", resp.Kvs)
	}
	for _, kv := range resp.Kvs {
		if kv.Value != nil || kv.ModRevision == 0 || kv.Version == 0 {
			t.Errorf("keys_only kv = %v, want metadata without value", kv)
		}
	}
	if v := e.get(t, "a").Value; string(v) != "v2" {
		t.Errorf("keys_only changed the stored KV: value %q", v)
	}

	resp, err = e.a.Range(context.Background(), &pb.RangeRequest{Key: []byte("a"), RangeEnd: []byte("\x00"), CountOnly: true, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 || resp.Count != 4 || resp.More {
		t.Errorf("count_only: kvs %v count %d more %v, want none 4 false", resp.Kvs, resp.Count, resp.More)
	}
}

func TestRangeAtRevision(t *testing.T) {
	e := rangeFixture(t)
	if res := e.apply(&pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: 3}}); res.Err != nil {
		t.Fatal(res.Err)
	} else {
		<-res.Physc
	}
	tests := []struct {
		name    string
		rev     int64
		want    []string
		wantErr error
	}{
		{"current", 0, []string{"a", "b", "c", "d"}, nil},
		{"at the compacted revision", 3, []string{"b", "d"}, nil},
		{"old revision", 5, []string{"a", "b", "d"}, nil},
		{"latest revision", 11, []string{"a", "b", "c", "d"}, nil},
		{"compacted", 2, nil, errs.ErrCompacted},
		{"future", 12, nil, errs.ErrFutureRev},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := e.a.Range(context.Background(), &pb.RangeRequest{Key: []byte("a"), RangeEnd: []byte("\x00"), Revision: tt.rev})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := keysOf(resp.Kvs); !slices.Equal(got, tt.want) {
				t.Errorf("keys = %v, want %v", got, tt.want)
			}
			// etcd's header carries the store's revision, not the one read.
			if resp.Header.Revision != 11 {
				t.Errorf("header revision = %d, want 11", resp.Header.Revision)
			}
		})
	}
}

func TestRangeThroughApply(t *testing.T) {
	e := rangeFixture(t)
	res := e.apply(rangeReq(&pb.RangeRequest{Key: []byte("c")}))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	resp := res.Resp.(*pb.RangeResponse)
	if got := keysOf(resp.Kvs); !slices.Equal(got, []string{"c"}) || resp.Header.Revision != 11 {
		t.Errorf("keys %v rev %d", got, resp.Header.Revision)
	}
	if res := e.apply(rangeReq(&pb.RangeRequest{Key: []byte("c"), Revision: 99})); !errors.Is(res.Err, errs.ErrFutureRev) {
		t.Errorf("err = %v, want ErrFutureRev", res.Err)
	}
}
