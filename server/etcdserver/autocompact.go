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

// newAutoCompactor returns nil when auto compaction is off. Its
// compactions act as root so that they also work with auth enabled.
func newAutoCompactor(c *Config, kv compactionProposer, rev func() int64) (*compactor.Compactor, error) {
	if c.AutoCompactionRetention == 0 {
		return nil, nil
	}
	compact := func(ctx context.Context, rev int64) error {
		// A logical compaction (physical false) to rev.
		_, err := kv.Compact(withRoot(ctx), &pb.CompactionRequest{Revision: rev})
		return err
	}
	return compactor.New(compactor.Config{
		Mode: c.AutoCompactionMode, Retention: c.AutoCompactionRetention,
		Rev: rev, Compact: compact, Logger: c.Logger,
	})
}

// compactionProposer proposes compactions (KVService).
type compactionProposer interface {
	Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error)
}

// leadership tells whether the member leads, and when that may change.
type leadership interface {
	leads() bool
	leaderChanged() <-chan struct{}
}

// runWhileLeading runs the compactor c until stop, pausing it whenever the
// member is not the leader.
func runWhileLeading(c *compactor.Compactor, l leadership, stop <-chan struct{}) {
	if c == nil {
		return
	}
	c.Pause()
	c.Run()
	defer c.Stop()
	for {
		changed := l.leaderChanged()
		if l.leads() {
			c.Resume()
		} else {
			c.Pause()
		}
		select {
		case <-changed:
		case <-stop:
			return
		}
	}
}
