package etcdserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.uber.org/zap"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// Corruption detection, as etcd does it. Members that applied the same
// entries hold the same key space, so HashKV at one revision must agree
// between them as long as they compacted at the same revision. Three checks
// compare it:
//
//   - the initial check (feature gate InitialCorruptCheck): before a member
//     serves, it asks every peer for HashKV at its own revision and refuses
//     to start on a mismatch;
//   - the periodic check (--corrupt-check-time): the leader compares its
//     hash with the followers' and raises a CORRUPT alarm on a mismatch;
//   - the compaction hash check (feature gate CompactHashCheck,
//     --compact-hash-check-time): the leader compares the hashes members
//     computed while compacting (mvcc.Store.Hashes) and raises CORRUPT for
//     the minority that disagrees.
//
// A CORRUPT alarm makes the apply step refuse every KV and lease request
// (apply.Applier), on every member.

// peerHash is one peer's answer to a HashKV request on its peer URL.
type peerHash struct {
	id   uint64
	urls []string
	resp *pb.HashKVResponse // nil if no URL answered
	err  error              // the last URL's error when resp is nil
}

// hashSource is what the checks need from the member; tests fake it.
type hashSource interface {
	HashByRev(rev int64) (mvcc.KeyValueHash, int64, error)
	Hashes() []mvcc.KeyValueHash
	memberID() uint64
	reqTimeout() time.Duration
	peerHashes(rev int64) []peerHash
	linearizableReadNotify(ctx context.Context) error
	triggerCorruptAlarm(id uint64)
}

// corruptionChecker runs the three checks against a hashSource.
type corruptionChecker struct {
	lg  *zap.Logger
	src hashSource

	mu sync.Mutex
	// latestRevisionChecked is the newest compaction revision whose hash
	// the compaction check has compared on every member.
	latestRevisionChecked int64
}

// initialCheck compares this member's hash with every peer's at this
// member's revision. Only a peer with the same compact revision can
// disagree; peers that are behind, ahead or unreachable are logged.
func (c *corruptionChecker) initialCheck() error {
	self := idHex(c.src.memberID())
	c.lg.Info("starting initial corruption check",
		zap.String("local-member-id", self), zap.Duration("timeout", c.src.reqTimeout()))
	h, _, err := c.src.HashByRev(0)
	if err != nil {
		return fmt.Errorf("%s failed to fetch hash (%w)", self, err)
	}
	mismatches := 0
	for _, p := range c.src.peerHashes(h.Revision) {
		if c.initialMismatch(h, p) {
			mismatches++
		}
	}
	if mismatches > 0 {
		return fmt.Errorf("%s found data inconsistency with peers", self)
	}
	c.lg.Info("initial corruption checking passed; no corruption", zap.String("local-member-id", self))
	return nil
}

// initialMismatch logs how peer p compares with the local hash h and
// reports whether it proves an inconsistency.
func (c *corruptionChecker) initialMismatch(h mvcc.KeyValueHash, p peerHash) bool {
	local := []zap.Field{
		zap.String("local-member-id", idHex(c.src.memberID())),
		zap.Int64("local-member-revision", h.Revision),
		zap.Int64("local-member-compact-revision", h.CompactRevision),
		zap.Uint32("local-member-hash", h.Hash),
		zap.String("remote-peer-id", idHex(p.id)),
		zap.Strings("remote-peer-endpoints", p.urls),
	}
	if p.resp == nil {
		msg := ""
		switch {
		case errors.Is(p.err, rpctypes.ErrFutureRev):
			msg = "cannot fetch hash from slow remote peer"
		case errors.Is(p.err, rpctypes.ErrCompacted):
			msg = "cannot fetch hash from remote peer; local member is behind"
		case errors.Is(p.err, rpctypes.ErrClusterIDMismatch):
			msg = "cluster ID mismatch"
		default:
			return false // already logged as a failed hash kv request
		}
		c.lg.Warn(msg, append(local, zap.Error(p.err))...)
		return false
	}
	if h.Hash == p.resp.Hash {
		return false
	}
	fields := append(local,
		zap.Int64("remote-peer-revision", p.resp.GetHeader().GetRevision()),
		zap.Int64("remote-peer-compact-revision", p.resp.CompactRevision),
		zap.Uint32("remote-peer-hash", p.resp.Hash))
	if h.CompactRevision != p.resp.CompactRevision {
		c.lg.Warn("found different compact revision values from remote peer", fields...)
		return false
	}
	c.lg.Warn("found different hash values from remote peer", fields...)
	return true
}

// periodicCheck is one round of the leader's --corrupt-check-time check.
// The leader hashes its key space, asks the followers for their hashes at
// that revision, catches up with everything committed, and hashes again.
// It then lists the suspects - itself first if its own two hashes of one
// revision differ, then each follower that breaks a followerRule - and
// raises one alarm, for the first suspect.
func (c *corruptionChecker) periodicCheck() error {
	own, peers, err := c.gatherHashes()
	if err != nil {
		return err
	}
	var suspects []uint64
	if own.selfInconsistent() {
		c.lg.Warn("found hash mismatch",
			zap.Int64("revision-1", own.asked.Revision), zap.Int64("compact-revision-1", own.asked.CompactRevision), zap.Uint32("hash-1", own.asked.Hash),
			zap.Int64("revision-2", own.now.Revision), zap.Int64("compact-revision-2", own.now.CompactRevision), zap.Uint32("hash-2", own.now.Hash))
		suspects = append(suspects, c.src.memberID())
	}
	answered := 0
	for _, p := range peers {
		if p.resp == nil {
			continue
		}
		answered++
		if c.breaksRules(own, p) {
			suspects = append(suspects, p.id)
		}
	}
	c.lg.Info("finished peer corruption check", zap.Int("number-of-peers-checked", answered))
	if len(suspects) > 0 {
		c.src.triggerCorruptAlarm(suspects[0])
	}
	return nil
}

// leaderHashes are the leader's two hashes of one periodic round.
type leaderHashes struct {
	asked  mvcc.KeyValueHash // at the revision the followers were asked for
	now    mvcc.KeyValueHash // after catching up with the commit index
	nowRev int64             // the leader's revision after catching up
}

// selfInconsistent reports two different hashes of the same revision and
// compaction: the leader's own store changed under it.
func (h leaderHashes) selfInconsistent() bool {
	return h.now.Hash != h.asked.Hash && h.now.Revision == h.asked.Revision &&
		h.now.CompactRevision == h.asked.CompactRevision
}

// gatherHashes takes the leader's first hash, the followers' answers for its
// revision, and the leader's second hash once it has applied everything
// committed (so a follower ahead of the first hash is not a false alarm).
func (c *corruptionChecker) gatherHashes() (leaderHashes, []peerHash, error) {
	var own leaderHashes
	var err error
	if own.asked, _, err = c.src.HashByRev(0); err != nil {
		return own, nil, err
	}
	peers := c.src.peerHashes(own.asked.Revision)
	ctx, cancel := context.WithTimeout(context.Background(), c.src.reqTimeout())
	err = c.src.linearizableReadNotify(ctx)
	cancel()
	if err != nil {
		return own, nil, err
	}
	if own.now, own.nowRev, err = c.src.HashByRev(0); err != nil {
		return own, nil, err
	}
	return own, peers, nil
}

// followerRule is one invariant of a follower's HashKV answer against the
// leader's hashes, with etcd's warning for when it is broken.
type followerRule struct {
	broken  func(own leaderHashes, r *pb.HashKVResponse) bool
	warning string
	fields  func(own leaderHashes, r *pb.HashKVResponse) []zap.Field
}

var followerRules = []followerRule{
	{
		broken:  func(own leaderHashes, r *pb.HashKVResponse) bool { return r.GetHeader().GetRevision() > own.nowRev },
		warning: "revision from follower must be less than or equal to leader's",
		fields: func(own leaderHashes, r *pb.HashKVResponse) []zap.Field {
			return []zap.Field{zap.Int64("leader-revision", own.nowRev), zap.Int64("follower-revision", r.GetHeader().GetRevision())}
		},
	},
	{
		broken:  func(own leaderHashes, r *pb.HashKVResponse) bool { return r.CompactRevision > own.now.CompactRevision },
		warning: "compact revision from follower must be less than or equal to leader's",
		fields: func(own leaderHashes, r *pb.HashKVResponse) []zap.Field {
			return []zap.Field{zap.Int64("leader-compact-revision", own.now.CompactRevision), zap.Int64("follower-compact-revision", r.CompactRevision)}
		},
	},
	{
		broken: func(own leaderHashes, r *pb.HashKVResponse) bool {
			return r.CompactRevision == own.asked.CompactRevision && r.Hash != own.asked.Hash
		},
		warning: "same compact revision then hashes must match",
		fields: func(own leaderHashes, r *pb.HashKVResponse) []zap.Field {
			return []zap.Field{zap.Int64("leader-compact-revision", own.asked.CompactRevision), zap.Uint32("leader-hash", own.asked.Hash),
				zap.Int64("follower-compact-revision", r.CompactRevision), zap.Uint32("follower-hash", r.Hash)}
		},
	},
}

// breaksRules logs every followerRule that follower p's answer breaks and
// reports whether there was any.
func (c *corruptionChecker) breaksRules(own leaderHashes, p peerHash) bool {
	broke := false
	for _, rule := range followerRules {
		if rule.broken(own, p.resp) {
			c.lg.Warn(rule.warning, append(rule.fields(own, p.resp), zap.String("follower-peer-id", idHex(p.id)))...)
			broke = true
		}
	}
	return broke
}

// compactHashCheck is one round of the leader's compaction hash check.
// Compactions are replicated, so every member compacts at the same
// revisions and stores the hash it computed on the way. Going from the
// newest compaction not yet verified to the oldest, it asks the peers for
// their hash at that compaction until one round covered every member (or
// raised alarms). A peer still compacting or unreachable makes it try the
// next older compaction; that is no alarm.
func (c *corruptionChecker) compactHashCheck() {
	c.lg.Info("starting compact hash check",
		zap.String("local-member-id", idHex(c.src.memberID())), zap.Duration("timeout", c.src.reqTimeout()))
	hashes := c.uncheckedRevisions()
	for i, h := range hashes {
		peers := c.src.peerHashes(h.Revision)
		if len(peers) == 0 {
			continue
		}
		if c.checkPeerHashes(h, peers) {
			c.lg.Info("finished compaction hash check", zap.Int("number-of-hashes-checked", i+1))
			return
		}
	}
	c.lg.Info("finished compaction hash check", zap.Int("number-of-hashes-checked", len(hashes)))
}

// uncheckedRevisions returns the stored compaction hashes newer than the
// last one verified, newest first.
func (c *corruptionChecker) uncheckedRevisions() []mvcc.KeyValueHash {
	c.mu.Lock()
	last := c.latestRevisionChecked
	c.mu.Unlock()
	hashes := c.src.Hashes()
	slices.SortFunc(hashes, func(a, b mvcc.KeyValueHash) int { return cmp.Compare(b.Revision, a.Revision) })
	for i, h := range hashes {
		if h.Revision <= last {
			return hashes[:i]
		}
	}
	return hashes
}

// checkPeerHashes compares the leader's compaction hash with the peers' and
// reports whether this compaction settled the round (every member agreed,
// or alarms were raised). Peers that did not answer or sit at another
// compact revision are skipped. When hashes differ, the members sharing the
// hash of a quorum of the cluster are right and every other member gets a
// CORRUPT alarm; without such a quorum nobody can tell who is right and the
// alarm is raised for member 0, the whole cluster.
func (c *corruptionChecker) checkPeerHashes(leader mvcc.KeyValueHash, peers []peerHash) bool {
	leaderID := idHex(c.src.memberID())
	byHash := map[uint32][]uint64{leader.Hash: {c.src.memberID()}}
	checked := 0
	for _, p := range peers {
		reason := ""
		switch {
		case p.resp == nil:
			reason = "no response"
		case p.resp.CompactRevision != leader.CompactRevision:
			reason = fmt.Sprintf("the peer's CompactRevision %d doesn't match leader's CompactRevision %d",
				p.resp.CompactRevision, leader.CompactRevision)
		}
		if reason != "" {
			c.lg.Warn("Skipped peer's hash", zap.Int("number-of-peers", len(peers)),
				zap.String("leader-id", leaderID), zap.String("peer-id", idHex(p.id)), zap.String("reason", reason))
			continue
		}
		checked++
		byHash[p.resp.Hash] = append(byHash[p.resp.Hash], p.id)
	}
	if len(byHash) == 1 {
		return c.consistentHash(leader, checked, len(peers))
	}

	quorum := (len(peers)+1)/2 + 1
	quorumExists := false
	for hash, ids := range byHash {
		if len(ids) >= quorum {
			quorumExists = true
			delete(byHash, hash) // the majority is right
			break
		}
	}
	if !quorumExists {
		c.lg.Error("Detected compaction hash mismatch but cannot identify the corrupted members, so intentionally set the memberID as 0",
			zap.String("leader-id", leaderID), zap.Int64("leader-revision", leader.Revision),
			zap.Int64("leader-compact-revision", leader.CompactRevision), zap.Uint32("leader-hash", leader.Hash))
		c.src.triggerCorruptAlarm(0)
	}
	for _, hash := range slices.Sorted(maps.Keys(byHash)) {
		ids := byHash[hash]
		if quorumExists {
			for _, id := range ids {
				c.src.triggerCorruptAlarm(id)
			}
		}
		c.lg.Error("Detected compaction hash mismatch",
			zap.String("leader-id", leaderID), zap.Int64("leader-revision", leader.Revision),
			zap.Int64("leader-compact-revision", leader.CompactRevision), zap.Uint32("leader-hash", leader.Hash),
			zap.Uint32("peer-hash", hash), zap.String("peer-ids", idList(ids)), zap.Bool("quorum-exist", quorumExists))
	}
	return true
}

// consistentHash handles a compaction on which every checked member
// agreed: it settles the round only if every peer was checked.
func (c *corruptionChecker) consistentHash(h mvcc.KeyValueHash, checked, peers int) bool {
	if checked == peers {
		c.lg.Info("successfully checked hash on whole cluster",
			zap.Int("number-of-peers-checked", checked), zap.Int64("revision", h.Revision),
			zap.Int64("compactRevision", h.CompactRevision))
		c.mu.Lock()
		c.latestRevisionChecked = max(c.latestRevisionChecked, h.Revision)
		c.mu.Unlock()
		return true
	}
	c.lg.Warn("skipped revision in compaction hash check; was not able to check all peers",
		zap.Int("number-of-peers-checked", checked), zap.Int("number-of-peers", peers),
		zap.Int64("revision", h.Revision), zap.Int64("compactRevision", h.CompactRevision))
	return false
}

// idList formats member IDs as etcd's types.IDSlice does: hex, comma separated.
func idList(ids []uint64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = idHex(id)
	}
	return strings.Join(parts, ",")
}
