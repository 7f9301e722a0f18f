package robustness

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// opKind is the kind of a recorded request.
type opKind int

const (
	opGet         opKind = iota // linearizable range of one key or of the key prefix
	opPut                       // put, optionally attached to a lease
	opDelete                    // delete of one key
	opTxn                       // compare (mod revision or value) then put, else get
	opLeaseGrant                // grant; only the header revision is checked
	opLeaseRevoke               // revoke; deletes the keys attached to the lease
)

// input is what a client asked for.
type input struct {
	kind  opKind
	key   string // for opGet with prefix, the prefix
	pfx   bool   // opGet: range over every key starting with key
	value string // opPut, opTxn
	lease int64  // opPut: attach to this lease; opLeaseRevoke: the lease

	// opTxn compare: ModRevision(key) == cmpRev if cmpByRev, else
	// Value(key) == cmpValue.
	cmpByRev bool
	cmpRev   int64
	cmpValue string

	// appliedAt is set on a write whose outcome the client does not know
	// but which the cluster's revision history shows applied: the
	// revision it was applied at.
	appliedAt int64
}

// kv is one key's value as the model and the client see it.
type kv struct {
	key            string
	value          string
	createRev, mod int64
	version        int64
	lease          int64
}

func (k kv) String() string {
	s := fmt.Sprintf("%s=%q@c%d/m%d/v%d", k.key, k.value, k.createRev, k.mod, k.version)
	if k.lease != 0 {
		s += fmt.Sprintf("/l%x", k.lease)
	}
	return s
}

// output is what the client got back.
type output struct {
	// unknown marks a write that failed with an error that does not say
	// whether it was applied; nothing else in the output is meaningful.
	unknown   bool
	rev       int64 // response header revision
	kvs       []kv  // opGet; opTxn's else branch
	deleted   int64 // opDelete
	succeeded bool  // opTxn
	err       string
}

// state is the model's store: every live key and the store revision. It
// is treated as immutable; steps return new states.
type state struct {
	rev  int64
	keys map[string]kv
	hash uint64
}

func newState(rev int64, keys map[string]kv) *state {
	s := &state{rev: rev, keys: keys}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d;", rev)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		fmt.Fprintf(h, "%s;", keys[k])
	}
	s.hash = h.Sum64()
	return s
}

func (s *state) equal(o *state) bool {
	return s.hash == o.hash && s.rev == o.rev && maps.Equal(s.keys, o.keys)
}

func (s *state) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rev=%d", s.rev)
	for _, k := range slices.Sorted(maps.Keys(s.keys)) {
		fmt.Fprintf(&b, " %s", s.keys[k])
	}
	return b.String()
}

// put returns the state after writing value to key at revision s.rev+1.
func (s *state) put(key, value string, lease int64) *state {
	keys := maps.Clone(s.keys)
	rev := s.rev + 1
	old, ok := keys[key]
	nk := kv{key: key, value: value, createRev: rev, mod: rev, version: 1, lease: lease}
	if ok {
		nk.createRev = old.createRev
		nk.version = old.version + 1
	}
	keys[key] = nk
	return newState(rev, keys)
}

// deleteKeys removes the given keys in one revision if any of them exists,
// returning the new state and how many were deleted.
func (s *state) deleteKeys(match func(kv) bool) (*state, int64) {
	keys := maps.Clone(s.keys)
	var n int64
	for k, v := range keys {
		if match(v) {
			delete(keys, k)
			n++
		}
	}
	if n == 0 {
		return s, 0
	}
	return newState(s.rev+1, keys), n
}

// rangeOf returns the kvs a get of in would return, sorted by key.
func (s *state) rangeOf(in *input) []kv {
	var out []kv
	for _, k := range slices.Sorted(maps.Keys(s.keys)) {
		if k == in.key || (in.pfx && strings.HasPrefix(k, in.key)) {
			out = append(out, s.keys[k])
		}
	}
	return out
}

// compare evaluates a txn's compare as etcd does: a missing key has mod
// revision 0 and fails every value comparison.
func (s *state) compare(in *input) bool {
	k, ok := s.keys[in.key]
	if in.cmpByRev {
		return k.mod == in.cmpRev // k is the zero kv if missing
	}
	return ok && k.value == in.cmpValue
}

// step returns every state the model can be in after applying in with
// response out to s; none if out is impossible.
func step(s *state, in *input, out *output) []*state {
	if out.unknown {
		return stepUnknown(s, in)
	}
	switch in.kind {
	case opGet:
		if out.rev == s.rev && slices.Equal(out.kvs, s.rangeOf(in)) {
			return []*state{s}
		}
	case opLeaseGrant:
		if out.rev == s.rev {
			return []*state{s}
		}
	case opPut:
		if ns := s.put(in.key, in.value, in.lease); out.rev == ns.rev {
			return []*state{ns}
		}
	case opDelete:
		ns, n := s.deleteKeys(func(k kv) bool { return k.key == in.key })
		if out.rev == ns.rev && out.deleted == n {
			return []*state{ns}
		}
	case opLeaseRevoke:
		ns, _ := s.deleteKeys(func(k kv) bool { return k.lease == in.lease })
		if out.rev == ns.rev {
			return []*state{ns}
		}
	case opTxn:
		ok := s.compare(in)
		if ok != out.succeeded {
			return nil
		}
		if ok {
			if ns := s.put(in.key, in.value, 0); out.rev == ns.rev {
				return []*state{ns}
			}
			return nil
		}
		if out.rev == s.rev && slices.Equal(out.kvs, s.rangeOf(&input{key: in.key})) {
			return []*state{s}
		}
	}
	return nil
}

// stepUnknown handles a write whose outcome the client does not know.
// Puts and txns are only kept in the history when the revision history
// shows them applied (appliedAt), so they must apply, at that revision;
// deletes and revokes may or may not have applied.
func stepUnknown(s *state, in *input) []*state {
	switch in.kind {
	case opPut:
		if s.rev+1 == in.appliedAt {
			return []*state{s.put(in.key, in.value, in.lease)}
		}
	case opTxn:
		if s.rev+1 == in.appliedAt && s.compare(in) {
			return []*state{s.put(in.key, in.value, 0)}
		}
	case opDelete:
		ns, _ := s.deleteKeys(func(k kv) bool { return k.key == in.key })
		return uniq(s, ns)
	case opLeaseRevoke:
		ns, _ := s.deleteKeys(func(k kv) bool { return k.lease == in.lease })
		return uniq(s, ns)
	}
	return nil
}

func uniq(a, b *state) []*state {
	if a == b {
		return []*state{a}
	}
	return []*state{a, b}
}

// kvModel is the porcupine model of etcd's key-value store with revisions.
// The initial revision is 1 with no keys, as in a fresh cluster.
var kvModel = (&porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{newState(1, map[string]kv{})} },
	Step: func(st, in, out interface{}) []interface{} {
		var res []interface{}
		for _, s := range step(st.(*state), in.(*input), out.(*output)) {
			res = append(res, s)
		}
		return res
	},
	Equal:             func(a, b interface{}) bool { return a.(*state).equal(b.(*state)) },
	Hash:              func(s interface{}) uint64 { return s.(*state).hash },
	DescribeOperation: func(in, out interface{}) string { return describe(in.(*input), out.(*output)) },
	DescribeState:     func(s interface{}) string { return s.(*state).String() },
}).ToModel()

func describe(in *input, out *output) string {
	var req string
	switch in.kind {
	case opGet:
		if in.pfx {
			req = fmt.Sprintf("range(%q*)", in.key)
		} else {
			req = fmt.Sprintf("get(%q)", in.key)
		}
	case opPut:
		req = fmt.Sprintf("put(%q, %q)", in.key, in.value)
		if in.lease != 0 {
			req = fmt.Sprintf("put(%q, %q, lease %x)", in.key, in.value, in.lease)
		}
	case opDelete:
		req = fmt.Sprintf("delete(%q)", in.key)
	case opTxn:
		cmp := fmt.Sprintf("mod(%q)==%d", in.key, in.cmpRev)
		if !in.cmpByRev {
			cmp = fmt.Sprintf("value(%q)==%q", in.key, in.cmpValue)
		}
		req = fmt.Sprintf("txn(if %s then put(%q, %q) else get)", cmp, in.key, in.value)
	case opLeaseGrant:
		req = "leaseGrant()"
	case opLeaseRevoke:
		req = fmt.Sprintf("leaseRevoke(%x)", in.lease)
	}
	if out.unknown {
		s := req + " -> unknown (" + out.err + ")"
		if in.appliedAt != 0 {
			s += fmt.Sprintf(", applied at rev %d", in.appliedAt)
		}
		return s
	}
	res := fmt.Sprintf("rev %d", out.rev)
	switch in.kind {
	case opGet:
		res += fmt.Sprintf(" %v", out.kvs)
	case opDelete:
		res += fmt.Sprintf(" deleted %d", out.deleted)
	case opTxn:
		if out.succeeded {
			res += " succeeded"
		} else {
			res += fmt.Sprintf(" failed, else %v", out.kvs)
		}
	}
	return req + " -> " + res
}
