package etcdserver

import (
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/metrics"
)

// Automatic space reclamation, a cairn extension. etcd never gives the free
// pages of its db file back by itself: after a compaction the file keeps its
// size (and a NOSPACE alarm stays raised) until an operator defragments.
// cairn's defrag is online, so a member may start one by itself.
//
// A member defragments when its file has at least AutoDefragFreePercent
// free and at least AutoDefragMinFreeBytes. Time is cut into periods of
// AutoDefragInterval, and each period into one share per member: the
// followers' shares first, by member ID, the leader's last. A member acts
// only in its own share, at most once per period, so members of a cluster
// (whose clocks agree to well within a share) take turns and the leader
// goes last. Members without a leader wait.

// reclaimPolicy is the decision, kept free of clocks and servers so that it
// can be tested on its own.
type reclaimPolicy struct {
	freePercent uint // 0: never
	minFree     int64
	interval    time.Duration
}

// turn is this member's share of each period: index share of shares.
type turn struct{ share, shares int }

// defragTurn orders members for reclamation: every member but the leader by
// ID, then the leader. ok is false when self is not among members.
func defragTurn(self, leader uint64, members []uint64) (t turn, ok bool) {
	order := make([]uint64, 0, len(members))
	hasLeader := false
	for _, id := range members {
		if id == leader {
			hasLeader = true
			continue
		}
		order = append(order, id)
	}
	slices.Sort(order)
	if hasLeader {
		order = append(order, leader)
	}
	i := slices.Index(order, self)
	return turn{share: i, shares: len(order)}, i >= 0
}

// period is the number of the interval now falls in.
func (p reclaimPolicy) period(now time.Time) int64 {
	return now.UnixNano() / int64(p.interval)
}

// inTurn reports whether now falls in t's share of its period.
func (p reclaimPolicy) inTurn(now time.Time, t turn) bool {
	share := p.interval / time.Duration(t.shares)
	if share <= 0 {
		return false
	}
	offset := now.UnixNano() % int64(p.interval)
	return int(offset/int64(share)) == t.share
}

// worthIt reports whether a file of size bytes with free bytes a defrag
// would give back is worth defragmenting.
func (p reclaimPolicy) worthIt(size, free int64) bool {
	return p.freePercent > 0 && free > 0 && free >= p.minFree && free*100 >= int64(p.freePercent)*size
}

// checkEvery is how often the loop looks: often enough to act early in a
// share, seldom enough to cost nothing.
func (p reclaimPolicy) checkEvery() time.Duration {
	return min(max(p.interval/100, 50*time.Millisecond), 10*time.Second)
}

// autoDefragLoop defragments when the policy says so, until Stop.
func (m *Maintenance) autoDefragLoop() {
	p := m.reclaim
	if p.freePercent == 0 || p.interval <= 0 {
		return
	}
	ticker := time.NewTicker(p.checkEvery())
	defer ticker.Stop()
	lastPeriod := int64(-1)
	for {
		var now time.Time
		select {
		case <-m.stop:
			return
		case now = <-ticker.C:
		}
		if p.period(now) == lastPeriod || !m.autoDefragDue(p, now) {
			continue
		}
		lastPeriod = p.period(now)
		m.autoDefrag()
	}
}

// autoDefragDue reports whether it is this member's turn and its file is
// worth defragmenting.
func (m *Maintenance) autoDefragDue(p reclaimPolicy, now time.Time) bool {
	leader := m.member.Leader()
	if leader == 0 {
		return false
	}
	var ids []uint64
	for _, mb := range m.member.members() {
		ids = append(ids, mb.ID)
	}
	t, ok := defragTurn(m.self, leader, ids)
	if !ok || !p.inTurn(now, t) {
		return false
	}
	be, ok := m.member.backend()
	return ok && p.worthIt(be.Size(), be.FreeBytes())
}

// autoDefrag runs one automatic defrag and counts what it gave back.
func (m *Maintenance) autoDefrag() {
	be, ok := m.member.backend()
	if !ok {
		return
	}
	before := be.Size()
	m.lg.Info("starting automatic defragmentation",
		zap.Int64("current-db-size-bytes", before),
		zap.Int64("current-db-free-bytes", be.FreeBytes()),
		zap.Uint("free-percent-threshold", m.reclaim.freePercent))
	metrics.AutoDefrags.Inc()
	defer m.announceDefrag()()
	if err := m.defrag(be); err != nil {
		m.lg.Warn("automatic defragmentation failed", zap.Error(err))
		return
	}
	reclaimed := max(before-be.Size(), 0)
	metrics.AutoDefragReclaimedBytes.Add(float64(reclaimed))
	m.lg.Info("finished automatic defragmentation",
		zap.Int64("reclaimed-bytes", reclaimed), zap.Int64("current-db-size-bytes", be.Size()))
}
