package auth

import (
	"bytes"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"

	"github.com/cairnkv/cairn/pkg/fuzztest"
)

// permissionsFrom pairs keys into (key, range end) permissions, keeping
// only those RoleGrantPermission accepts.
func permissionsFrom(keys [][]byte) []*authpb.Permission {
	var perms []*authpb.Permission
	for i := 0; i+1 < len(keys); i += 2 {
		if isValidPermissionRange(keys[i], keys[i+1]) {
			perms = append(perms, &authpb.Permission{Key: keys[i], RangeEnd: keys[i+1]})
		}
	}
	return perms
}

// FuzzPermits checks the merged permission set against a brute-force model
// of etcd's interval-tree check, for arbitrary granted permissions and
// request ranges. query holds the request's key and range end (separated as
// in fuzztest.Keys); perms the granted (key, range end) pairs.
func FuzzPermits(f *testing.F) {
	f.Fuzz(func(t *testing.T, query, perms []byte) {
		q := fuzztest.Keys(query)
		key, end := q[0], []byte(nil)
		if len(q) > 1 {
			end = q[1]
		}
		if len(key) == 0 {
			return // an empty key is refused before any permission check
		}
		granted := permissionsFrom(fuzztest.Keys(perms))
		ivs := make([]interval, len(granted))
		for i, p := range granted {
			ivs[i] = permInterval(p)
		}
		got := permits(newRangeSet(ivs), key, end)
		if want := modelPermits(granted, key, end); got != want {
			t.Fatalf("permissions %s, request [%q, %q): permits = %v, model says %v", describe(granted), key, end, got, want)
		}
	})
}

// modelPermits is etcd's rule, checked key by key: a single key must lie in
// some grant; a range whose end is not above its key is allowed when its
// key is (etcd's interval tree only visits grants holding the key then);
// any other range must have every key in it granted. A key that is not
// granted, if any, can be taken at the request's key or at the end of some
// grant (the gaps between half-open intervals start there), so checking
// those points decides.
func modelPermits(perms []*authpb.Permission, key, end []byte) bool {
	if len(end) == 0 || (!modelOpenEnded(end) && bytes.Compare(end, key) < 0) {
		return modelGranted(perms, key)
	}
	if !modelGranted(perms, key) {
		return false
	}
	for _, p := range perms {
		e := modelEnd(p)
		if e != nil && bytes.Compare(key, e) <= 0 && modelBelow(e, end) && !modelGranted(perms, e) {
			return false
		}
	}
	return true
}

func modelOpenEnded(end []byte) bool { return len(end) == 1 && end[0] == 0 }

// modelBelow reports a < end for a request end, where "\x00" is the end of
// the key space.
func modelBelow(a, end []byte) bool {
	return modelOpenEnded(end) || bytes.Compare(a, end) < 0
}

// modelEnd is the exclusive end of a grant; nil when it has none.
func modelEnd(p *authpb.Permission) []byte {
	switch {
	case len(p.RangeEnd) == 0:
		return append(bytes.Clone(p.Key), 0)
	case len(p.RangeEnd) == 1 && p.RangeEnd[0] == 0:
		return nil
	}
	return p.RangeEnd
}

func modelGranted(perms []*authpb.Permission, key []byte) bool {
	for _, p := range perms {
		e := modelEnd(p)
		if bytes.Compare(p.Key, key) <= 0 && (e == nil || bytes.Compare(key, e) < 0) {
			return true
		}
	}
	return false
}

func describe(perms []*authpb.Permission) string {
	var b bytes.Buffer
	for _, p := range perms {
		fmt.Fprintf(&b, "[%q, %q) ", p.Key, p.RangeEnd)
	}
	return b.String()
}

// TestFuzzSeeds keeps the committed seed corpus equal to its generator:
// the permission layouts of TestPermissionTable and the edges of the key
// space. Regenerate with CAIRN_WRITE_FUZZ_SEEDS=1 go test -run TestFuzzSeeds.
func TestFuzzSeeds(t *testing.T) {
	enc := fuzztest.KeysSeed // 0 for "\x00", 1 for 'a', 2 for 'b', 3 for 0xff, a space between keys
	fuzztest.Check(t, "FuzzPermits", []fuzztest.Seed{
		{Name: "single-key", Args: []any{enc("1"), enc("1 ")}},
		{Name: "range-inside", Args: []any{enc("12 13"), enc("11 2")}},
		{Name: "from-key", Args: []any{enc("2 0"), enc("12 0")}},
		{Name: "adjacent", Args: []any{enc("11 2"), enc("11 12 12 2")}},
		{Name: "gap-of-one-key", Args: []any{enc("11 2"), enc("11 12 120 2")}},
		{Name: "inverted", Args: []any{enc("12 11"), enc("1 2")}},
		{Name: "all-ff", Args: []any{enc("33 0"), enc("3 0")}},
		{Name: "point-as-range", Args: []any{enc("1 10"), enc("1 ")}},
	})
}
