package etcdserver

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cairnkv/cairn/pkg/failpoint"
	"github.com/cairnkv/cairn/server/apply"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/metrics"
	"github.com/cairnkv/cairn/server/raftnode"
	"github.com/cairnkv/cairn/server/storage/backend"
)

func (s *Server) applyLoop() {
	for {
		select {
		case batch := <-s.node.Apply():
			s.applyBatch(batch)
		case <-s.stopc:
			return
		}
	}
}

func (s *Server) applyBatch(batch raftnode.ToApply) {
	if !raft.IsEmptySnap(batch.Snapshot) && batch.Snapshot.GetMetadata().GetIndex() > s.appliedIndex.Load() {
		if err := s.installSnapshot(batch.Snapshot); err != nil {
			s.fail(err)
			return
		}
	}
	if n := len(batch.Entries); n > 0 && batch.Entries[n-1].GetIndex() > s.node.LastPersisted() {
		select {
		case <-batch.Persisted:
		case <-s.stopc:
			return
		}
	}
	membersChanged := false
	for _, e := range batch.Entries {
		s.applyEntry(e)
		membersChanged = membersChanged || e.GetType() == raftpb.EntryConfChange
	}
	metrics.ProposalsApplied.Set(float64(s.appliedIndex.Load()))
	if s.stores.be.PendingWrites() >= s.cfg.BackendBatchLimit {
		s.commits.kickCommit()
	}
	switch {
	// After a membership change a member that joins and can only catch up
	// through a snapshot (the log no longer starts at the first entry)
	// needs one whose configuration already lists it (raft refuses one that
	// does not), so a fresh one is taken at once instead of waiting for
	// --snapshot-count more entries.
	case s.snapshotForced || (membersChanged && s.snaps.logCompacted()):
		// Rare, and what asked for it needs the snapshot now.
		s.snapshotForced = false
		s.takeSnapshot()
		s.snaps.wait()
	case s.snaps.due(s.appliedIndex.Load(), s.cfg.SnapshotCount):
		s.takeSnapshot()
	}
}

func (s *Server) applyEntry(e *raftpb.Entry) {
	var (
		id     uint64
		result *apply.Result
	)
	s.commits.mu.Lock()
	switch e.GetType() {
	case raftpb.EntryNormal:
		failpoint.Inject("beforeApplyOneEntryNormal")
		id, result = s.applyNormal(e)
	case raftpb.EntryConfChange:
		failpoint.Inject("beforeApplyOneConfChange")
		s.applyConfChange(e)
	}
	// Monotonic: replay re-applies conf changes at or below the stored index,
	// and those must not pull the index back (it decides what replay skips).
	if e.GetIndex() > s.commits.index {
		s.commits.index, s.commits.term = e.GetIndex(), e.GetTerm()
	}
	s.commits.mu.Unlock()
	// Applied (uncommitted in the backend) but not yet answered: a crash
	// here must lose nothing the proposer could have been told about.
	failpoint.Inject("afterApplyOneEntry")

	s.appliedIndex.Store(e.GetIndex())
	if id != 0 {
		if result != nil && errors.Is(result.Err, errs.ErrNoSpace) && !s.stores.hasAlarm(pb.AlarmType_NOSPACE) {
			s.goAttach(func() { s.props.raiseNoSpaceThenAnswer(id, result, s.stores.applier.QuotaBytes()) })
		} else {
			s.props.answer(id, result)
		}
	}
	s.appliedWait.Trigger(e.GetIndex())
}

// applyNormal applies one request. Entries the backend already holds (index
// at or below the consistent index read at start) are skipped: that is what
// makes WAL replay after a crash idempotent.
func (s *Server) applyNormal(e *raftpb.Entry) (uint64, *apply.Result) {
	if len(e.GetData()) == 0 || e.GetIndex() <= s.commits.index {
		return 0, nil
	}
	r, err := s.props.local.decode(e.GetData())
	if err != nil {
		s.lg.Error("skipping undecodable raft entry", zap.Uint64("index", e.GetIndex()), zap.Error(err))
		return 0, nil
	}
	id := r.GetID()
	if id == 0 {
		id = r.GetHeader().GetID()
	}
	start := time.Now()
	var result *apply.Result
	if s.applyClusterRequest(r) {
		result = &apply.Result{}
	} else {
		result = s.stores.applier.Apply(apply.WithIndex(context.Background(), e.GetIndex()), r)
	}
	s.recordApply(r, result, time.Since(start))
	return id, result
}

// recordApply observes an applied request's duration by its type, and
// counts it as slow past --warning-apply-duration.
func (s *Server) recordApply(r *pb.InternalRaftRequest, result *apply.Result, took time.Duration) {
	op := requestOp(r)
	success := strconv.FormatBool(result == nil || result.Err == nil)
	metrics.ApplySeconds.WithLabelValues("v3", op, success).Observe(took.Seconds())
	if took > s.cfg.WarningApplyDuration {
		metrics.SlowApplies.Inc()
		s.lg.Warn("apply request took too long", zap.Duration("took", took),
			zap.Duration("expected-duration", s.cfg.WarningApplyDuration), zap.String("op", op))
	}
}

// requestOp names the request r carries as etcd's metrics do: the request
// message's name without "Request" ("Put", "LeaseGrant",
// "ClusterMemberAttrSet").
func requestOp(r *pb.InternalRaftRequest) string {
	if op := commonRequestOp(r); op != "" {
		return op
	}
	return requestOpByReflection(r)
}

// commonRequestOp names the requests a write load is made of without
// reflection, which visits every field of r and costs more than applying
// a small put's metrics; "" for any other request.
func commonRequestOp(r *pb.InternalRaftRequest) string {
	switch {
	case r.Put != nil:
		return "Put"
	case r.Txn != nil:
		return "Txn"
	case r.DeleteRange != nil:
		return "DeleteRange"
	case r.Range != nil:
		return "Range"
	case r.LeaseGrant != nil:
		return "LeaseGrant"
	case r.LeaseRevoke != nil:
		return "LeaseRevoke"
	case r.LeaseCheckpoint != nil:
		return "LeaseCheckpoint"
	}
	return ""
}

// requestOpByReflection names any request by its message type.
func requestOpByReflection(r *pb.InternalRaftRequest) string {
	op := "Unknown"
	r.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if fd.Message() == nil || fd.Name() == "header" {
			return true
		}
		op = strings.TrimSuffix(string(fd.Message().Name()), "Request")
		return false
	})
	return op
}

func (s *Server) applyConfChange(e *raftpb.Entry) {
	cc := &raftpb.ConfChange{}
	if err := proto.Unmarshal(e.GetData(), cc); err != nil {
		s.lg.Error("skipping undecodable conf change", zap.Uint64("index", e.GetIndex()), zap.Error(err))
		return
	}
	cs, err := s.node.ApplyConfChange(cc)
	if err != nil {
		s.lg.Warn("conf change not applied to raft", zap.Error(err))
		return
	}
	s.raftView.setConfState(cs)
	if e.GetIndex() <= s.commits.index {
		return // replay: raft needed the change again, the backend has it
	}
	tx := s.stores.be.BatchTx()
	tx.Lock()
	if b, err := json.Marshal(cs); err == nil {
		tx.UnsafePut(backend.BucketMeta, backend.MetaConfState, b)
	}
	connect := s.records.applyChange(tx, cc)
	members, _ := membership.Load(tx)
	tx.Unlock()
	s.membersChanged() // once the change is visible to readers
	connect()
	if cc.GetId() != 0 {
		s.props.answer(cc.GetId(), members)
	}
	if cc.GetType() == raftpb.ConfChangeRemoveNode && cc.GetNodeId() == s.id {
		s.goAttach(func() { s.fail(errs.ErrMemberRemoved) })
	}
}

// takeSnapshot records a raft snapshot at the applied index and trims the
// in-memory log. The db on disk must cover everything the snapshot claims,
// so the snapshot is saved only once a backend commit cut now is durable.
// The apply loop only cuts that commit and reads the membership: the
// commit's write and fsync, the .snap file and the WAL marker happen in
// the background while entries go on being applied (a synchronous commit
// and two fsyncs here held every request up every --snapshot-count
// entries). One snapshot is saved at a time; the next waits for it.
func (s *Server) takeSnapshot() {
	s.snaps.wait() // the membership read below must not race the last save
	applied := s.appliedIndex.Load()
	payload, err := membershipSnapshot(s.stores.be, s.versions.clusterVersion)
	if err != nil {
		s.lg.Warn("cannot encode membership for the snapshot", zap.Uint64("applied-index", applied), zap.Error(err))
		return
	}
	s.snaps.save(applied, s.raftView.confState, payload, s.commits.startCommit())
}

// fail reports a fatal error; the main stops the member.
func (s *Server) fail(err error) {
	s.lg.Error("member failed", zap.Error(err))
	select {
	case s.errc <- err:
	default:
	}
}
