package etcdserver

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/server/compactor"
)

// Auto compaction (--auto-compaction-mode, --auto-compaction-retention):
// server/compactor decides when and to which revision; the member supplies
// the current revision and a Compact through raft, and lets it compact only
// while this member leads, as etcd pauses its compactor on followers.

// newAutoCompactor returns nil when auto compaction is off.
func (s *Server) newAutoCompactor() (*compactor.Compactor, error) {
	if s.cfg.AutoCompactionRetention == 0 {
		return nil, nil
	}
	return compactor.New(compactor.Config{
		Mode: s.cfg.AutoCompactionMode, Retention: s.cfg.AutoCompactionRetention,
		Rev: s.currentRev, Compact: s.autoCompact, Logger: s.lg,
	})
}

// autoCompact proposes a logical compaction (physical false) to rev. It
// acts as root so that it also works with auth enabled.
func (s *Server) autoCompact(ctx context.Context, rev int64) error {
	_, err := s.Compact(withRoot(ctx), &pb.CompactionRequest{Revision: rev})
	return err
}

// autoCompactLoop runs the compactor until Stop, pausing it whenever this
// member is not the leader.
func (s *Server) autoCompactLoop() {
	c := s.autoCompactor
	if c == nil {
		return
	}
	c.Pause()
	c.Run()
	defer c.Stop()
	for {
		changed := s.node.LeaderChanged()
		if s.Leader() == s.id {
			c.Resume()
		} else {
			c.Pause()
		}
		select {
		case <-changed:
		case <-s.stopc:
			return
		}
	}
}
