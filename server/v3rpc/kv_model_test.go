package v3rpc

import (
	"bytes"
	"maps"
	"slices"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/server/errs"
)

// kvModel is a brute-force model of etcd's KV semantics for the request
// fuzzer: every revision's whole key space as a map, and the compacted
// revision. It is deliberately naive; its only job is to be obviously
// right. The rules it encodes are etcd v3.7's (apply and mvcc).
type kvModel struct {
	states    []map[string]*mvccpb.KeyValue // states[rev]; revision 1 is the empty store
	compacted int64                         // 0: never compacted
	leases    map[int64]bool
}

func newKVModel(leases ...int64) *kvModel {
	m := &kvModel{states: []map[string]*mvccpb.KeyValue{{}, {}}, leases: map[int64]bool{}}
	for _, id := range leases {
		m.leases[id] = true
	}
	return m
}

func (m *kvModel) rev() int64                           { return int64(len(m.states) - 1) }
func (m *kvModel) current() map[string]*mvccpb.KeyValue { return m.states[m.rev()] }

// firstRev is etcd's FirstRev: the compacted revision, -1 before any
// compaction.
func (m *kvModel) firstRev() int64 {
	if m.compacted == 0 {
		return -1
	}
	return m.compacted
}

// inRange is etcd's range convention for requests: an empty end is the
// single key, "\x00" every key >= key, anything else an exclusive end.
func inRange(k, key, end []byte) bool {
	switch {
	case len(end) == 0:
		return bytes.Equal(k, key)
	case len(end) == 1 && end[0] == 0:
		return bytes.Compare(k, key) >= 0
	}
	return bytes.Compare(k, key) >= 0 && bytes.Compare(k, end) < 0
}

// keysIn returns the live KVs of state in [key, end), in key order.
func keysIn(state map[string]*mvccpb.KeyValue, key, end []byte) []*mvccpb.KeyValue {
	var kvs []*mvccpb.KeyValue
	for _, k := range slices.Sorted(maps.Keys(state)) {
		if inRange([]byte(k), key, end) {
			kvs = append(kvs, state[k])
		}
	}
	return kvs
}

// txnState is a write in progress: the state the ops see and the revision
// the writes get.
type txnState struct {
	view    map[string]*mvccpb.KeyValue
	rev     int64
	changed bool
}

func (m *kvModel) begin() *txnState {
	return &txnState{view: maps.Clone(m.current()), rev: m.rev() + 1}
}

// commit records the txn's state as a new revision if it changed anything.
func (m *kvModel) commit(ts *txnState) {
	if ts.changed {
		m.states = append(m.states, ts.view)
	}
}

func (ts *txnState) put(key, value []byte, lease int64) {
	kv := &mvccpb.KeyValue{Key: bytes.Clone(key), Value: bytes.Clone(value), CreateRevision: ts.rev, ModRevision: ts.rev, Version: 1, Lease: lease}
	if old, ok := ts.view[string(key)]; ok {
		kv.CreateRevision, kv.Version = old.CreateRevision, old.Version+1
	}
	ts.view[string(key)] = kv
	ts.changed = true
}

func (ts *txnState) deleteRange(key, end []byte) []*mvccpb.KeyValue {
	gone := keysIn(ts.view, key, end)
	for _, kv := range gone {
		delete(ts.view, string(kv.Key))
	}
	ts.changed = ts.changed || len(gone) > 0
	return gone
}

// rangeResult is the model's answer to a Range: kvs in response order
// where that order is fully determined; sortKey gives the value responses
// must be ordered by (ties may come in any order, as etcd's sort is not
// stable).
type rangeResult struct {
	count   int64
	more    bool
	kvs     []*mvccpb.KeyValue
	all     []*mvccpb.KeyValue // kvs before the limit cut them
	sortKey func(*mvccpb.KeyValue) []byte
	err     error
}

// rangeAt answers r against the txn view (revision 0) or history. For a
// Range in a Txn, check has already refused unreadable revisions.
func (m *kvModel) rangeAt(view map[string]*mvccpb.KeyValue, r *pb.RangeRequest) rangeResult {
	state := view
	switch {
	case r.Revision > m.rev():
		return rangeResult{err: errs.ErrFutureRev}
	case r.Revision > 0 && r.Revision < m.compacted:
		return rangeResult{err: errs.ErrCompacted}
	case r.Revision > 0:
		state = m.states[r.Revision]
	}
	all := keysIn(state, r.Key, r.RangeEnd)
	res := rangeResult{count: int64(len(all))}
	if r.CountOnly {
		return res
	}
	kvs := all
	if r.SortOrder == pb.RangeRequest_NONE && !hasFilters(r) && r.Limit > 0 && r.Limit < int64(len(kvs)) {
		kvs = kvs[:r.Limit+1]
	}
	kvs = slices.DeleteFunc(slices.Clone(kvs), func(kv *mvccpb.KeyValue) bool { return filteredOut(r, kv) })
	res.kvs, res.sortKey = sortedLikeEtcd(kvs, r)
	res.all = res.kvs
	if r.Limit > 0 && int64(len(res.kvs)) > r.Limit {
		res.kvs, res.more = res.kvs[:r.Limit], true
	}
	return res
}

func hasFilters(r *pb.RangeRequest) bool {
	return r.MinModRevision != 0 || r.MaxModRevision != 0 || r.MinCreateRevision != 0 || r.MaxCreateRevision != 0
}

func filteredOut(r *pb.RangeRequest, kv *mvccpb.KeyValue) bool {
	return (r.MaxModRevision != 0 && kv.ModRevision > r.MaxModRevision) ||
		(r.MinModRevision != 0 && kv.ModRevision < r.MinModRevision) ||
		(r.MaxCreateRevision != 0 && kv.CreateRevision > r.MaxCreateRevision) ||
		(r.MinCreateRevision != 0 && kv.CreateRevision < r.MinCreateRevision)
}

// sortedLikeEtcd sorts as etcd does: a target other than KEY without an
// order sorts ascending; KEY ascending is the store's order already.
func sortedLikeEtcd(kvs []*mvccpb.KeyValue, r *pb.RangeRequest) ([]*mvccpb.KeyValue, func(*mvccpb.KeyValue) []byte) {
	order := r.SortOrder
	if r.SortTarget != pb.RangeRequest_KEY && order == pb.RangeRequest_NONE {
		order = pb.RangeRequest_ASCEND
	}
	key := sortKeyOf(r.SortTarget)
	if order == pb.RangeRequest_NONE || (r.SortTarget == pb.RangeRequest_KEY && order == pb.RangeRequest_ASCEND) {
		return kvs, key
	}
	sort.SliceStable(kvs, func(i, j int) bool {
		c := bytes.Compare(key(kvs[i]), key(kvs[j]))
		if order == pb.RangeRequest_DESCEND {
			return c > 0
		}
		return c < 0
	})
	return kvs, key
}

// sortKeyOf returns a byte key that orders KVs like the sort target.
func sortKeyOf(target pb.RangeRequest_SortTarget) func(*mvccpb.KeyValue) []byte {
	num := func(v int64) []byte {
		return []byte{byte(uint64(v)>>56 ^ 0x80), byte(v >> 48), byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	}
	switch target {
	case pb.RangeRequest_VERSION:
		return func(kv *mvccpb.KeyValue) []byte { return num(kv.Version) }
	case pb.RangeRequest_CREATE:
		return func(kv *mvccpb.KeyValue) []byte { return num(kv.CreateRevision) }
	case pb.RangeRequest_MOD:
		return func(kv *mvccpb.KeyValue) []byte { return num(kv.ModRevision) }
	case pb.RangeRequest_VALUE:
		return func(kv *mvccpb.KeyValue) []byte { return kv.Value }
	}
	return func(kv *mvccpb.KeyValue) []byte { return kv.Key }
}

// compare is etcd's applyCompare against the state before the Txn.
func compare(state map[string]*mvccpb.KeyValue, c *pb.Compare) bool {
	kvs := keysIn(state, c.Key, c.RangeEnd)
	if len(kvs) == 0 {
		if c.Target == pb.Compare_VALUE {
			return false
		}
		return compareKV(c, &mvccpb.KeyValue{})
	}
	for _, kv := range kvs {
		if !compareKV(c, kv) {
			return false
		}
	}
	return true
}

func compareKV(c *pb.Compare, kv *mvccpb.KeyValue) bool {
	var result int
	switch c.Target {
	case pb.Compare_VALUE:
		result = bytes.Compare(kv.Value, c.GetValue())
	case pb.Compare_CREATE:
		result = cmpInt(kv.CreateRevision, c.GetCreateRevision())
	case pb.Compare_MOD:
		result = cmpInt(kv.ModRevision, c.GetModRevision())
	case pb.Compare_VERSION:
		result = cmpInt(kv.Version, c.GetVersion())
	case pb.Compare_LEASE:
		result = cmpInt(kv.Lease, c.GetLease())
	}
	switch c.Result {
	case pb.Compare_EQUAL:
		return result == 0
	case pb.Compare_NOT_EQUAL:
		return result != 0
	case pb.Compare_GREATER:
		return result > 0
	case pb.Compare_LESS:
		return result < 0
	}
	return true
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// chosenOps evaluates rt's compares (nested ones included) against state
// and returns the ops of the chosen branch.
func chosenOps(state map[string]*mvccpb.KeyValue, rt *pb.TxnRequest) (bool, []*pb.RequestOp) {
	ok := true
	for _, c := range rt.Compare {
		ok = ok && compare(state, c)
	}
	if ok {
		return true, rt.Success
	}
	return false, rt.Failure
}

// checkTxn is etcd's check of the chosen ops before a Txn writes: in
// execution order, against the state before the Txn, first failure wins.
// A Put with ignore_* on a key an earlier op deletes also fails (etcd
// would crash there; cairn refuses it with ErrKeyNotFound).
func (m *kvModel) checkTxn(pre map[string]*mvccpb.KeyValue, rt *pb.TxnRequest, ts *txnState) error {
	_, ops := chosenOps(pre, rt)
	for _, op := range ops {
		var err error
		switch req := op.Request.(type) {
		case *pb.RequestOp_RequestRange:
			err = m.checkRead(req.RequestRange)
		case *pb.RequestOp_RequestPut:
			err = m.checkPut(pre, ts, req.RequestPut)
			ts.put(req.RequestPut.Key, nil, 0)
		case *pb.RequestOp_RequestDeleteRange:
			ts.deleteRange(req.RequestDeleteRange.Key, req.RequestDeleteRange.RangeEnd)
		case *pb.RequestOp_RequestTxn:
			err = m.checkTxn(pre, req.RequestTxn, ts)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *kvModel) checkRead(r *pb.RangeRequest) error {
	switch {
	case r.Revision == 0:
		return nil
	case r.Revision > m.rev():
		return errs.ErrFutureRev
	case r.Revision < m.firstRev():
		return errs.ErrCompacted
	}
	return nil
}

func (m *kvModel) checkPut(pre map[string]*mvccpb.KeyValue, ts *txnState, p *pb.PutRequest) error {
	if p.Lease != 0 && !m.leases[p.Lease] {
		return errs.ErrLeaseNotFound
	}
	if p.IgnoreValue || p.IgnoreLease {
		if _, ok := pre[string(p.Key)]; !ok {
			return errs.ErrKeyNotFound
		}
		if _, ok := ts.view[string(p.Key)]; !ok {
			return errs.ErrKeyNotFound
		}
	}
	return nil
}

// applyPut is a Put's effect on ts (checks passed); it returns prev_kv.
func applyPut(ts *txnState, p *pb.PutRequest) *mvccpb.KeyValue {
	prev := ts.view[string(p.Key)]
	value, lease := p.Value, p.Lease
	if p.IgnoreValue {
		value = prev.Value
	}
	if p.IgnoreLease {
		lease = prev.Lease
	}
	ts.put(p.Key, value, lease)
	return prev
}
