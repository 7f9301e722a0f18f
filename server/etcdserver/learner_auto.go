package etcdserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/membership"
)

// Learner extensions of cairn (none of them is in etcd v3.7; all are off by
// default, so a cairn member behaves as etcd's unless asked otherwise):
//
//   - automatic promotion (--experimental-learner-auto-promote): the leader
//     promotes a learner by itself once the learner has been caught up (the
//     90% rule of MemberPromote, and reachable over its peer URL) without
//     interruption for --experimental-learner-auto-promote-after, and every
//     voter of the cluster is healthy. A learner can opt out
//     (--experimental-learner-no-auto-promote, or being read-only).
//   - learner by default (--experimental-member-add-as-learner): MemberAdd
//     on this member adds every new member as a learner, and turns automatic
//     promotion on. A member added with a wrong peer URL therefore never
//     changes the quorum and can always be removed again.
//   - read-only learners (--experimental-learner-read-only): the learner
//     serves serializable and linearizable (ReadIndex via the leader) Range
//     and Watch, refuses writes and is never promoted automatically.
//
// The leader learns a learner's own settings from its peer URL
// (learnerSettingsPath); a learner that does not know the path (an etcd
// member) keeps the defaults.

// learnerSettingsPath is the peer endpoint reporting a member's learner
// settings as JSON (a cairn extension).
const learnerSettingsPath = "/cairn/learner"

// defaultAutoPromoteAfter is --experimental-learner-auto-promote-after's
// default.
const defaultAutoPromoteAfter = 30 * time.Second

// learnerSettingsTimeout bounds the leader's request for a learner's
// settings; a learner that cannot answer within it does not count as caught
// up.
const learnerSettingsTimeout = time.Second

// LearnerSettings is what a member reports on learnerSettingsPath.
type LearnerSettings struct {
	// AutoPromote: the member accepts being promoted automatically.
	AutoPromote bool `json:"autoPromote"`
	// ReadOnly: the member serves reads and Watch while it is a learner.
	ReadOnly bool `json:"readOnly"`
	// IsLearner: the member is a learner right now.
	IsLearner bool `json:"isLearner"`
}

// OwnLearnerSettings are this member's settings.
func (a *MembershipAdmin) OwnLearnerSettings() LearnerSettings {
	return LearnerSettings{
		AutoPromote: !a.rules.learnerReadOnly && !a.rules.learnerNoAutoPromote,
		ReadOnly:    a.rules.learnerReadOnly,
		IsLearner:   a.member.IsLearner(),
	}
}

// IsReadOnlyLearner reports whether this member is a learner that serves
// reads and Watch (--experimental-learner-read-only).
func (s *Server) IsReadOnlyLearner() bool { return s.cfg.LearnerReadOnly && s.IsLearner() }

// autoPromoteEnabled: this member, while it leads, promotes learners.
func (c *Config) autoPromoteEnabled() bool { return c.LearnerAutoPromote || c.MemberAddAsLearner }

// learnerLoopEnabled: the leader's learner loop has something to do.
func (c *Config) learnerLoopEnabled() bool {
	return c.autoPromoteEnabled() || c.StandbyFailoverAfter > 0
}

func (c *Config) autoPromoteAfter() time.Duration {
	if c.LearnerAutoPromoteAfter > 0 {
		return c.LearnerAutoPromoteAfter
	}
	return defaultAutoPromoteAfter
}

// autoPromoteInterval is how often the leader looks at its learners: often
// enough to promote soon after the duration has passed, but not more than
// once per tick nor less than once a second.
func (c *Config) autoPromoteInterval() time.Duration {
	d := c.autoPromoteAfter()
	if c.StandbyFailoverAfter > 0 && (!c.autoPromoteEnabled() || c.StandbyFailoverAfter < d) {
		d = c.StandbyFailoverAfter
	}
	return min(max(d/10, c.tickInterval()), time.Second)
}

func (a *MembershipAdmin) serveLearnerSettings(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(a.OwnLearnerSettings())
}

// errNoLearnerSettings: the member does not serve learnerSettingsPath.
var errNoLearnerSettings = errors.New("member does not report learner settings")

func getLearnerSettings(ctx context.Context, hc *http.Client, peerURL string) (LearnerSettings, error) {
	var st LearnerSettings
	ctx, cancel := context.WithTimeout(ctx, learnerSettingsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, peerURL+learnerSettingsPath, nil)
	if err != nil {
		return st, err
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return st, errNoLearnerSettings
	case resp.StatusCode != http.StatusOK:
		return st, fmt.Errorf("learner settings: %s", resp.Status)
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, err
	}
	return st, nil
}

// promoteTracker remembers since when each learner has been caught up
// without interruption.
type promoteTracker struct {
	after time.Duration
	since map[uint64]time.Time
}

func newPromoteTracker(after time.Duration) *promoteTracker {
	return &promoteTracker{after: after, since: map[uint64]time.Time{}}
}

// observe records whether learner id is caught up at now and reports
// whether it has been caught up for the whole duration.
func (p *promoteTracker) observe(id uint64, caughtUp bool, now time.Time) bool {
	if !caughtUp {
		delete(p.since, id)
		return false
	}
	since, ok := p.since[id]
	if !ok {
		p.since[id] = now
		return p.after <= 0
	}
	return now.Sub(since) >= p.after
}

// keep forgets every learner not in ids (removed or promoted meanwhile).
func (p *promoteTracker) keep(ids map[uint64]bool) {
	for id := range p.since {
		if !ids[id] {
			delete(p.since, id)
		}
	}
}

func (p *promoteTracker) reset() { clear(p.since) }

// learnerSteward is the leader's care of the learners: automatic promotion
// and standby failover (see above). It runs on every member with either
// turned on and acts only while its member leads.
type learnerSteward struct {
	self   uint64
	member learnerMember
	peers  *http.Client
	lg     *zap.Logger
	timing learnerTiming
	stop   <-chan struct{}
}

// learnerTiming holds the durations of the steward's rules: how long a
// learner must have been caught up before it is promoted, how long a voter
// must have been unreachable before a standby replaces it (0: never), and
// how often the steward looks.
type learnerTiming struct {
	promoteAfter, failoverAfter, interval time.Duration
	autoPromote                           bool
}

// learnerMember is what learnerSteward needs of the member.
type learnerMember interface {
	leads() bool
	IsLearner() bool
	members() []*membership.Member
	// connectedSince is when the transport's connection to member id last
	// came up; zero while it is down.
	connectedSince(id uint64) time.Time
	// learnerReady fails unless learner id's log meets MemberPromote's
	// rule.
	learnerReady(id uint64) error
	Alarms() []*pb.AlarmMember
	MemberPromote(ctx context.Context, id uint64) ([]*membership.Member, error)
	proposeConfChange(ctx context.Context, typ raftpb.ConfChangeType, m *membership.Member) ([]*membership.Member, error)
}

// stewardMember is a learnerMember made of the member's core (leadership,
// members, connections, alarms) and its MembershipAdmin (the changes).
type stewardMember struct {
	memberView
	*MembershipAdmin
}

// run looks after the learners every interval until stop.
func (l *learnerSteward) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // ends with run: run's return cancels ctx
		select {
		case <-l.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	tr := newPromoteTracker(l.timing.promoteAfter)
	down := newPromoteTracker(l.timing.failoverAfter)
	t := time.NewTicker(l.timing.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			now := time.Now()
			if l.timing.failoverAfter > 0 && l.standbyFailoverTick(ctx, down, now) {
				continue
			}
			if l.timing.autoPromote {
				l.autoPromoteTick(ctx, tr, now)
			}
		case <-l.stop:
			return
		}
	}
}

// autoPromoteTick looks at every learner once and promotes at most one, the
// first that has been caught up for the duration, provided every voter is
// healthy. It returns the promoted member's ID (0 for none).
//
// Why this cannot cost the quorum: a learner does not vote, so only the
// promotion can change the quorum. It is proposed only when every voter has
// been connected to the leader for healthInterval, no alarm is raised, and
// the learner has been within the 90% rule and reachable over its peer URL
// for the whole duration: when the promotion applies, every voter of the new
// configuration, the promoted one included, is up and caught up, so the new
// quorum is met. A learner that never came up (a wrong peer URL) is never
// caught up, so it stays a learner and can be removed without a quorum
// change.
func (l *learnerSteward) autoPromoteTick(ctx context.Context, tr *promoteTracker, now time.Time) uint64 {
	if !l.member.leads() || l.member.IsLearner() {
		tr.reset()
		return 0
	}
	members := l.member.members()
	learners := map[uint64]bool{}
	for _, m := range members {
		if !m.IsLearner {
			continue
		}
		learners[m.ID] = true
		if !tr.observe(m.ID, l.learnerCaughtUp(ctx, m), now) {
			continue
		}
		if !l.votersHealthy(members) {
			l.lg.Info("learner caught up, but not every voter is healthy: not promoting it yet",
				zap.String("learner-id", idHex(m.ID)))
			continue
		}
		if _, err := l.member.MemberPromote(ctx, m.ID); err != nil {
			l.lg.Warn("automatic learner promotion failed", zap.String("learner-id", idHex(m.ID)), zap.Error(err))
			delete(tr.since, m.ID)
			continue
		}
		l.lg.Info("promoted learner automatically", zap.String("learner-id", idHex(m.ID)),
			zap.Duration("caught-up-for", now.Sub(tr.since[m.ID])))
		delete(tr.since, m.ID)
		return m.ID
	}
	tr.keep(learners)
	return 0
}

// learnerCaughtUp: the leader's transport reaches learner m, m answers on
// its peer URL and accepts automatic promotion, and its log satisfies the
// 90% rule.
func (l *learnerSteward) learnerCaughtUp(ctx context.Context, m *membership.Member) bool {
	if l.member.connectedSince(m.ID).IsZero() {
		return false
	}
	if err := l.member.learnerReady(m.ID); err != nil {
		return false
	}
	st, err := l.fetchLearnerSettings(ctx, m)
	if err != nil {
		return false
	}
	return st.AutoPromote && !st.ReadOnly
}

// votersHealthy: every voter is this member or has been connected to it for
// healthInterval, and no alarm is raised.
func (l *learnerSteward) votersHealthy(members []*membership.Member) bool {
	voters := votersOf(members)
	connected := countConnected(voters, l.self, time.Now().Add(-healthInterval), l.member.connectedSince)
	return len(voters) > 0 && connected == len(voters) && len(l.member.Alarms()) == 0
}

// standbyFailoverTick (--experimental-learner-standby-failover-after) runs
// on the leader. It tracks since when each voter has been unreachable, and
// once one has been for the whole duration while the cluster has no failure
// to spare (the healthy voters are exactly a quorum), it promotes a caught-up
// learner (any but a read-only one: a standby may have opted out of ordinary
// automatic promotion) and then removes the unreachable voter. It reports
// whether it changed the membership.
//
// Neither step can cost the quorum: the leader leads, so the healthy voters
// h are at least a quorum of the v voters. Promoting a caught-up learner
// makes v+1 voters with h+1 healthy, and h+1 >= (v+1)/2+1 whenever
// h >= v/2+1. Removing the unreachable voter then leaves v voters with h+1
// healthy. A voter is removed alone (no learner to promote) only when v is
// even, where it raises the failures the cluster survives instead of
// lowering them: that finishes a failover whose removal failed.
func (l *learnerSteward) standbyFailoverTick(ctx context.Context, down *promoteTracker, now time.Time) bool {
	if !l.member.leads() || l.member.IsLearner() {
		down.reset()
		return false
	}
	members := l.member.members()
	var voters, healthy int
	var gone *membership.Member
	ids := map[uint64]bool{}
	for _, m := range members {
		if m.IsLearner {
			continue
		}
		voters++
		ids[m.ID] = true
		unreachable := m.ID != l.self && l.member.connectedSince(m.ID).IsZero()
		if !unreachable {
			healthy++
		}
		if down.observe(m.ID, unreachable, now) && gone == nil {
			gone = m
		}
	}
	down.keep(ids)
	if gone == nil || healthy > voters/2+1 || len(l.member.Alarms()) > 0 {
		return false // nobody down for long enough, or a failure to spare
	}
	if healthy < voters/2+1 {
		return false // cannot happen on a leader that commits; never act then
	}
	var standby *membership.Member
	for _, m := range members {
		if !m.IsLearner {
			continue
		}
		if !l.member.connectedSince(m.ID).IsZero() && l.member.learnerReady(m.ID) == nil {
			if st, err := l.fetchLearnerSettings(ctx, m); err == nil && !st.ReadOnly {
				standby = m
				break
			}
		}
	}
	switch {
	case standby != nil:
		if _, err := l.member.MemberPromote(ctx, standby.ID); err != nil {
			l.lg.Warn("standby failover: promotion failed", zap.String("learner-id", idHex(standby.ID)), zap.Error(err))
			return false
		}
		l.lg.Warn("standby failover: promoted learner in place of an unreachable voter",
			zap.String("learner-id", idHex(standby.ID)), zap.String("unreachable-voter-id", idHex(gone.ID)))
		voters++
	case voters%2 == 1:
		return false // no standby; removing alone would not help
	}
	if _, err := l.member.proposeConfChange(ctx, raftpb.ConfChangeRemoveNode, &membership.Member{ID: gone.ID}); err != nil {
		l.lg.Warn("standby failover: removing the unreachable voter failed", zap.String("voter-id", idHex(gone.ID)), zap.Error(err))
		return true
	}
	l.lg.Warn("standby failover: removed unreachable voter", zap.String("voter-id", idHex(gone.ID)), zap.Int("voters", voters-1))
	delete(down.since, gone.ID)
	return true
}

// fetchLearnerSettings asks member m for its settings over its peer URLs.
func (l *learnerSteward) fetchLearnerSettings(ctx context.Context, m *membership.Member) (LearnerSettings, error) {
	var lastErr error = errNoLearnerSettings
	for _, u := range m.PeerURLs {
		st, err := getLearnerSettings(ctx, l.peers, u)
		if errors.Is(err, errNoLearnerSettings) {
			// A member that does not know the path (etcd) keeps the
			// defaults: it may be promoted.
			return LearnerSettings{AutoPromote: true, IsLearner: true}, nil
		}
		if err == nil {
			return st, nil
		}
		lastErr = err
	}
	return LearnerSettings{}, lastErr
}
