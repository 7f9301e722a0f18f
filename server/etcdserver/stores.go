package etcdserver

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/apply"
	"github.com/cairnkv/cairn/server/auth"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/lease"
	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// stores are the member's data stores: the backend, the mvcc store on it,
// the lessor and the applier over both, the watch streams open on the mvcc
// store, and the auth store (which outlives them: a snapshot install hands
// it the new backend).
//
// The apply loop replaces them when it installs a snapshot from the leader,
// holding mu for writing, and uses the fields freely otherwise (it is the
// only goroutine that replaces them). Every other goroutine goes through
// the methods here, which hold mu for reading while they use the stores and
// answer "stopped" once Stop has closed them.
type stores struct {
	mu      sync.RWMutex
	closed  bool // set by Stop under mu
	be      backend.Backend
	kv      *mvcc.Store
	lessor  *lease.Lessor
	applier *apply.Applier
	auth    *auth.Store  // lives across stores; Recover hands it a new backend
	watches watchStreams // the open watch streams of kv

	applied *atomic.Uint64 // the member's applied index, which Status reports with the stores
	lg      *zap.Logger
}

// rlock read-locks the stores; false (and no lock held) once Stop has
// closed them.
func (st *stores) rlock() bool {
	st.mu.RLock()
	if st.closed {
		st.mu.RUnlock()
		return false
	}
	return true
}

// readStores returns, and true, what f reads of the stores while they are held
// against a snapshot install; the zero T and false once Stop has closed
// them.
func readStores[T any](st *stores, f func() T) (v T, ok bool) {
	ok = st.withStores(func(backend.Backend) { v = f() })
	return v, ok
}

// close closes the watch streams, the lessor, the mvcc store and the
// backend; the caller holds mu for writing (or nobody else has the stores
// yet).
func (st *stores) close() {
	st.watches.closeAll()
	st.lessor.Stop()
	st.kv.Close()
	st.be.Close()
}

// currentLessor is the lessor of the current stores.
func (st *stores) currentLessor() *lease.Lessor {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.lessor
}

// backend returns the current backend; a snapshot install may replace it
// later (and close this one, which ends a defrag running on it).
func (st *stores) backend() (backend.Backend, bool) {
	return readStores(st, func() backend.Backend { return st.be })
}

// storeStatus reads what Status reports of the stores, all under one lock.
func (st *stores) storeStatus() (storeStatus, bool) {
	return readStores(st, func() storeStatus {
		return storeStatus{
			dbSize: st.be.Size(), dbSizeInUse: st.be.SizeInUse(), quotaBytes: st.applier.QuotaBytes(),
			storageVersion: storageVersionOf(st.be), alarms: st.applier.Alarms(), appliedIndex: st.applied.Load(),
		}
	})
}

// withStores runs read on the backend while the stores are held against a
// snapshot install; false when they are closed.
func (st *stores) withStores(read func(be backend.Backend)) bool {
	if !st.rlock() {
		return false
	}
	defer st.mu.RUnlock()
	read(st.be)
	return true
}

// currentRev is the store's revision.
func (st *stores) currentRev() int64 {
	v, _ := readStores(st, func() int64 { return st.kv.Rev() })
	return v
}

// alarms are the active alarms.
func (st *stores) alarms() []*pb.AlarmMember {
	v, _ := readStores(st, func() []*pb.AlarmMember { return st.applier.Alarms() })
	return v
}

// hasAlarm reports whether an alarm of type t is active. Apply loop only:
// it holds no lock.
func (st *stores) hasAlarm(t pb.AlarmType) bool {
	for _, a := range st.applier.Alarms() {
		if a.GetAlarm() == t {
			return true
		}
	}
	return false
}

// quotaBytes is the backend quota the applier enforces.
func (st *stores) quotaBytes() int64 {
	v, _ := readStores(st, func() int64 { return st.applier.QuotaBytes() })
	return v
}

// quotaAvailable reports whether r still fits in the backend quota; ok is
// false once the stores are closed.
func (st *stores) quotaAvailable(r proto.Message) (fits, ok bool) {
	if !st.rlock() {
		return false, false
	}
	fits = st.applier.QuotaAvailable(r)
	st.mu.RUnlock()
	return fits, true
}

// hashByRev is the key space's HashByRev on the current stores.
func (st *stores) hashByRev(rev int64) (mvcc.KeyValueHash, int64, error) {
	if !st.rlock() {
		return mvcc.KeyValueHash{}, 0, errs.ErrStopped
	}
	defer st.mu.RUnlock()
	return st.kv.HashByRev(rev)
}

// hashes are the hashes the mvcc store recorded at its compactions.
func (st *stores) hashes() []mvcc.KeyValueHash {
	v, _ := readStores(st, func() []mvcc.KeyValueHash { return st.kv.Hashes() })
	return v
}

// members returns the members the backend knows.
func (st *stores) members() []*membership.Member {
	ms, _ := readStores(st, func() []*membership.Member {
		tx := st.be.ReadTx()
		tx.RLock()
		defer tx.RUnlock()
		ms, err := membership.Load(tx)
		if err != nil {
			st.lg.Warn("cannot load members", zap.Error(err))
		}
		return ms
	})
	return ms
}

// memberPeerURLs loads a member's peer URLs from the members bucket.
func (st *stores) memberPeerURLs(id uint64) []string {
	if m := memberByID(st.members(), id); m != nil {
		return m.PeerURLs
	}
	return nil
}

// IsIDRemoved reports whether id was removed from the cluster.
func (st *stores) IsIDRemoved(id uint64) bool {
	removed, _ := readStores(st, func() []uint64 {
		tx := st.be.ReadTx()
		tx.RLock()
		defer tx.RUnlock()
		removed, err := membership.LoadRemoved(tx)
		if err != nil {
			return nil
		}
		return removed
	})
	return slices.Contains(removed, id)
}

// checkPassword holds the stores: a snapshot install must not close the
// backend the check reads.
func (st *stores) checkPassword(name, password string) (uint64, error) {
	if !st.rlock() {
		return 0, errs.ErrStopped
	}
	defer st.mu.RUnlock()
	return st.auth.CheckPassword(name, password)
}

// rangeLocal serves a Range from the local store.
func (st *stores) rangeLocal(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	if !st.rlock() {
		return nil, errs.ErrStopped
	}
	defer st.mu.RUnlock()
	return st.applier.Range(ctx, r)
}

// txnLocal runs a Txn of reads on the local store as ai; the applier
// checks ai's permissions as it would in the apply step.
func (st *stores) txnLocal(ctx context.Context, ai auth.AuthInfo, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	if !st.rlock() {
		return nil, errs.ErrStopped
	}
	defer st.mu.RUnlock()
	h := &pb.RequestHeader{Username: ai.Username, AuthRevision: ai.Revision}
	res := st.applier.Apply(ctx, &pb.InternalRaftRequest{Header: h, Txn: r})
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Resp.(*pb.TxnResponse), nil
}

// newWatchStream opens a watch stream on the store; it is closed when the
// store is replaced or the member stops.
func (st *stores) newWatchStream() (mvcc.WatchStream, error) {
	if !st.rlock() {
		return nil, errs.ErrStopped
	}
	defer st.mu.RUnlock()
	return st.watches.add(st.kv.NewWatchStream()), nil
}

// keyAt returns key's KeyValue at revision rev, nil if the key did not
// exist then; errs.ErrCompacted if rev is compacted.
func (st *stores) keyAt(ctx context.Context, key []byte, rev int64) (*mvccpb.KeyValue, error) {
	if !st.rlock() {
		return nil, errs.ErrStopped
	}
	defer st.mu.RUnlock()
	res, err := st.kv.Range(ctx, key, nil, mvcc.RangeOptions{Rev: rev, Limit: 1})
	if err != nil || len(res.KVs) == 0 {
		return nil, err
	}
	return res.KVs[0], nil
}
