package etcdserver

import (
	"bytes"
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// serverVersion is the etcd version this member reports.
const serverVersion = "3.7.1"

// Status reports the member's state as Maintenance.Status does.
func (s *Server) Status(ctx context.Context) (*pb.StatusResponse, error) {
	st, err := s.node.Status()
	if err != nil {
		return nil, errs.ErrStopped
	}
	hdr := s.Header()
	downgrade := s.versions.downgrade()
	if !s.rlockStores() {
		return nil, errs.ErrStopped
	}
	defer s.storeMu.RUnlock()
	resp := &pb.StatusResponse{
		Header:           hdr,
		Version:          serverVersion,
		DbSize:           s.be.Size(),
		DbSizeInUse:      s.be.SizeInUse(),
		Leader:           st.Lead,
		RaftIndex:        st.GetCommit(),
		RaftTerm:         st.GetTerm(),
		RaftAppliedIndex: s.appliedIndex.Load(),
		IsLearner:        s.IsLearner(),
		DbSizeQuota:      s.applier.QuotaBytes(),
		StorageVersion:   storageVersionOf(s.be),
		// etcd always sends it, empty while no downgrade is in progress.
		DowngradeInfo: &pb.DowngradeInfo{TargetVersion: downgrade.TargetVersion, Enabled: downgrade.Enabled},
	}
	for _, a := range s.applier.Alarms() {
		resp.Errors = append(resp.Errors, a.String())
	}
	return resp, nil
}

// hashIgnores leaves out of Hash what legitimately differs between members
// holding the same data: the raft bookkeeping in the meta bucket.
func hashIgnores(bucket, key []byte) bool {
	if !bytes.Equal(bucket, backend.BucketMeta) {
		return false
	}
	return bytes.Equal(key, backend.MetaConsistentIndex) || bytes.Equal(key, backend.MetaTerm) ||
		bytes.Equal(key, backend.MetaConfState)
}

// Hash hashes the whole backend.
func (s *Server) Hash(ctx context.Context) (*pb.HashResponse, error) {
	hdr := s.Header()
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	h, err := s.be.Hash(hashIgnores)
	if err != nil {
		return nil, err
	}
	return &pb.HashResponse{Header: hdr, Hash: h}, nil
}

// HashKV hashes the key space up to rev (0 = current).
func (s *Server) HashKV(ctx context.Context, rev int64) (*pb.HashKVResponse, error) {
	if !s.rlockStores() {
		return nil, errs.ErrStopped
	}
	h, current, err := s.kv.HashByRev(rev)
	s.storeMu.RUnlock()
	if err != nil {
		return nil, err
	}
	hdr := s.Header()
	hdr.Revision = current
	return &pb.HashKVResponse{Header: hdr, Hash: h.Hash, CompactRevision: h.CompactRevision, HashRevision: h.Revision}, nil
}

// Defragment rewrites the backend file online: applies, reads and
// snapshots go on while it copies, and wait only for its short final swap.
// Holding applyMu is not needed: the backend's new file only ever holds
// states the member committed (under applyMu), consistent index included.
func (s *Server) Defragment(ctx context.Context) error {
	be, ok := s.backend()
	if !ok {
		return errs.ErrStopped
	}
	return be.Defrag()
}

// backend returns the current backend; a snapshot install may replace it
// later (and close this one, which ends a defrag running on it).
func (s *Server) backend() (backend.Backend, bool) {
	if !s.rlockStores() {
		return nil, false
	}
	defer s.storeMu.RUnlock()
	return s.be, true
}

// Snapshot returns a consistent copy of the backend.
func (s *Server) Snapshot(ctx context.Context) (backend.Snapshot, error) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	return s.be.Snapshot(), nil
}

// Alarm proposes an alarm change (or read) through raft.
func (s *Server) Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	resp, err := s.proposeRequest(ctx, &pb.InternalRaftRequest{Alarm: r})
	if err != nil {
		return nil, err
	}
	out := resp.(*pb.AlarmResponse)
	s.fillHeader(&out.Header)
	return out, nil
}

// MoveLeader hands leadership to another voting member and waits until it
// has taken over.
func (s *Server) MoveLeader(ctx context.Context, r *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	if s.Leader() != s.id {
		return nil, errs.ErrNotLeader
	}
	target := r.GetTargetID()
	if !s.isVoter(target) {
		return nil, errs.ErrBadLeaderTransferee
	}
	if err := s.node.TransferLeadership(ctx, target); err != nil {
		return nil, errs.ErrTimeoutLeaderTransfer
	}
	tick := time.NewTicker(time.Duration(s.cfg.TickMs) * time.Millisecond)
	defer tick.Stop()
	for s.Leader() != target {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, errs.ErrTimeoutLeaderTransfer
		case <-s.stopc:
			return nil, errs.ErrStopped
		}
	}
	return &pb.MoveLeaderResponse{}, nil
}

// HandOverLeadership moves leadership to the voter that has been connected
// longest before a leader stops, so the cluster does not wait out an
// election timeout (as etcd does on a graceful stop).
func (s *Server) HandOverLeadership() {
	if !s.node.Started() || s.Leader() != s.id {
		return
	}
	st, err := s.node.Status()
	if err != nil {
		return
	}
	var target uint64
	var since time.Time
	for id := range st.Config.Voters.IDs() {
		if id == s.id {
			continue
		}
		if t := s.transport.ActiveSince(id); !t.IsZero() && (target == 0 || t.Before(since)) {
			target, since = id, t
		}
	}
	if target == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
	defer cancel()
	s.lg.Info("leader is stopping; transferring leadership", zap.String("transferee", idHex(target)))
	if _, err := s.MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: target}); err != nil {
		s.lg.Warn("leadership transfer failed", zap.String("transferee", idHex(target)), zap.Error(err))
		return
	}
	s.lg.Info("leadership transferred", zap.String("transferee", idHex(target)))
}

func (s *Server) isVoter(id uint64) bool {
	st, err := s.node.Status()
	if err != nil {
		return false
	}
	_, ok := st.Config.Voters.IDs()[id]
	return ok
}
