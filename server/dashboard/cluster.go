package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// learnerReadyPercent is MemberPromote's rule: a learner may be promoted
// once its log holds this share of the leader's committed entries.
const learnerReadyPercent = 90

// remoteStatusTimeout bounds the Status call to each other member; one
// that does not answer in time is shown as unreachable.
const remoteStatusTimeout = 1500 * time.Millisecond

// memberView is one row of the cluster view.
type memberView struct {
	ID         string   `json:"id"`    // decimal, as the gateway spells uint64
	IDHex      string   `json:"idHex"` // as etcdctl prints it
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	Role       string   `json:"role"` // leader, follower, learner
	Self       bool     `json:"self"`
	Reachable  bool     `json:"reachable"`
	// TokenRefused: the member answered but refused the caller's token
	// (one that has not applied the Authenticate yet, a JWT key that
	// differs from this member's).
	TokenRefused bool     `json:"tokenRefused"`
	Healthy      bool     `json:"healthy"`
	Error        string   `json:"error,omitempty"`
	Alarms       []string `json:"alarms"`

	Term         uint64 `json:"term,omitempty"`
	Index        uint64 `json:"index,omitempty"`
	AppliedIndex uint64 `json:"appliedIndex,omitempty"`
	ApplyLag     uint64 `json:"applyLag"`
	DBSize       int64  `json:"dbSize,omitempty"`
	DBSizeInUse  int64  `json:"dbSizeInUse,omitempty"`
	Version      string `json:"version,omitempty"`

	Progress *progressView `json:"progress,omitempty"`
	CatchUp  *catchUpView  `json:"catchUp,omitempty"`
}

// progressView is the leader's replication state of one member.
type progressView struct {
	Match        uint64 `json:"match"`
	Next         uint64 `json:"next"`
	State        string `json:"state"` // StateProbe, StateReplicate, StateSnapshot
	Inflight     int    `json:"inflight"`
	RecentActive bool   `json:"recentActive"`
	Paused       bool   `json:"paused"`
}

// catchUpView says how far a learner is from being promotable.
type catchUpView struct {
	Percent   float64 `json:"percent"`
	Threshold int     `json:"threshold"`
	Ready     bool    `json:"ready"`
}

// clusterView is the answer of /ui/api/cluster.
type clusterView struct {
	ClusterID  string       `json:"clusterId"`
	MemberID   string       `json:"memberId"` // the member serving the page
	Leader     string       `json:"leader"`   // "0" when there is none
	Revision   int64        `json:"revision"`
	RaftTerm   uint64       `json:"raftTerm"`
	FromLeader bool         `json:"fromLeader"` // progress is known only on the leader
	Members    []memberView `json:"members"`
}

// serveCluster answers with every member's status. The member list, this
// member's status and the alarms come through the local gRPC server with
// the caller's token, so a caller who may not call Status sees nothing.
func (d *Dashboard) serveCluster(w http.ResponseWriter, r *http.Request) {
	if !allowMethods(w, r, http.MethodGet) {
		return
	}
	view, err := d.cluster(callerContext(r))
	if err != nil {
		writeGRPCError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, view)
}

func (d *Dashboard) cluster(ctx context.Context) (*clusterView, error) {
	mt := pb.NewMaintenanceClient(d.cfg.Local)
	list, err := pb.NewClusterClient(d.cfg.Local).MemberList(ctx, &pb.MemberListRequest{})
	if err != nil {
		return nil, err
	}
	local, err := mt.Status(ctx, &pb.StatusRequest{})
	if err != nil {
		return nil, err
	}
	alarms, err := mt.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_GET})
	if err != nil {
		return nil, err
	}
	view := &clusterView{
		ClusterID: fmt.Sprint(local.Header.ClusterId),
		MemberID:  fmt.Sprint(local.Header.MemberId),
		Leader:    fmt.Sprint(local.Leader),
		Revision:  local.Header.Revision,
		RaftTerm:  local.RaftTerm,
	}
	statuses := d.remoteStatuses(ctx, list.Members, local)
	var rs raft.Status
	if d.cfg.Raft != nil {
		rs, _ = d.cfg.Raft.RaftStatus() // a stopping member has no progress to show
	}
	view.FromLeader = rs.RaftState == raft.StateLeader
	for _, m := range list.Members {
		view.Members = append(view.Members, buildMember(m, statuses[m.ID], local, rs, alarms.Alarms))
	}
	return view, nil
}

// statusResult is one member's Status answer or why there is none.
type statusResult struct {
	resp *pb.StatusResponse
	err  error
}

// remoteStatuses asks every other member for its status in parallel.
func (d *Dashboard) remoteStatuses(ctx context.Context, members []*pb.Member, local *pb.StatusResponse) map[uint64]statusResult {
	out := map[uint64]statusResult{local.Header.MemberId: {resp: local}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range members {
		if m.ID == local.Header.MemberId {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, remoteStatusTimeout)
			defer cancel()
			resp, err := d.remotes.status(cctx, m)
			mu.Lock()
			out[m.ID] = statusResult{resp: resp, err: err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func buildMember(m *pb.Member, st statusResult, local *pb.StatusResponse, rs raft.Status, alarms []*pb.AlarmMember) memberView {
	v := memberView{
		ID: fmt.Sprint(m.ID), IDHex: strconv.FormatUint(m.ID, 16), Name: m.Name,
		PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs,
		Self: m.ID == local.Header.MemberId, Alarms: []string{},
	}
	v.Role = roleOf(m, local.Leader)
	for _, a := range alarms {
		if a.MemberID == m.ID {
			v.Alarms = append(v.Alarms, a.Alarm.String())
		}
	}
	if st.err != nil {
		v.Error = describeStatusError(st.err)
		v.TokenRefused = refusedToken(st.err)
		v.Reachable = v.TokenRefused // it answered
	} else if s := st.resp; s != nil {
		v.Reachable = true
		v.Term, v.Index, v.AppliedIndex = s.RaftTerm, s.RaftIndex, s.RaftAppliedIndex
		if s.RaftIndex > s.RaftAppliedIndex {
			v.ApplyLag = s.RaftIndex - s.RaftAppliedIndex
		}
		v.DBSize, v.DBSizeInUse, v.Version = s.DbSize, s.DbSizeInUse, s.Version
		v.Healthy = s.Leader != 0 && len(v.Alarms) == 0
	}
	if pr, ok := rs.Progress[m.ID]; ok && rs.RaftState == raft.StateLeader {
		v.Progress = progressOf(pr)
	}
	if m.IsLearner {
		v.CatchUp = catchUpOf(m.ID, v, rs, local)
	}
	return v
}

func roleOf(m *pb.Member, leader uint64) string {
	switch {
	case m.IsLearner:
		return "learner"
	case m.ID == leader:
		return "leader"
	}
	return "follower"
}

func progressOf(pr tracker.Progress) *progressView {
	pv := &progressView{Match: pr.Match, Next: pr.Next, State: pr.State.String(), RecentActive: pr.RecentActive, Paused: pr.IsPaused()}
	if pr.Inflights != nil {
		pv.Inflight = pr.Inflights.Count()
	}
	return pv
}

// catchUpOf measures a learner against the promotion rule: on the leader
// from its progress (as MemberPromote decides), elsewhere from the
// learner's own applied index against the cluster's commit index.
func catchUpOf(id uint64, v memberView, rs raft.Status, local *pb.StatusResponse) *catchUpView {
	var have, want uint64
	if pr, ok := rs.Progress[id]; ok && rs.RaftState == raft.StateLeader {
		have, want = pr.Match, rs.GetCommit()
	} else if v.Reachable {
		have, want = v.AppliedIndex, local.RaftIndex
	} else {
		return nil
	}
	pct := 100.0
	if want > 0 {
		pct = min(100, float64(have)*100/float64(want))
	}
	return &catchUpView{Percent: pct, Threshold: learnerReadyPercent, Ready: pct >= learnerReadyPercent}
}

// describeStatusError says why a member's status is missing.
func describeStatusError(err error) string {
	switch {
	case err == errNoDialableURL, err == errNotPublished:
		return err.Error()
	case refusedToken(err):
		return "it answered but refused the token: " + status.Convert(err).Message()
	}
	return "unreachable: " + status.Convert(err).Message()
}

// refusedToken reports an answer that rejects the caller's credentials.
func refusedToken(err error) bool {
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied, codes.InvalidArgument:
		return true
	}
	return false
}

// firstDialable picks the first client URL the dashboard can dial.
func firstDialable(urls []string, haveTLS bool) (u *url.URL, ok bool) {
	for _, s := range urls {
		p, err := url.Parse(s)
		if err != nil {
			continue
		}
		if p.Scheme == "http" || (p.Scheme == "https" && haveTLS) {
			return p, true
		}
	}
	return nil, false
}
