package etcdserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/membership"
)

// promotePath is the peer endpoint a follower uses to ask the leader to
// promote a learner (etcd's /members/promote/<id>).
const promotePath = "/members/promote/"

// promoteErrors are the errors a promotion can end with, recognised again
// from the leader's answer by their text.
var promoteErrors = []error{errs.ErrLearnerNotReady, errs.ErrMemberNotLearner, errs.ErrIDNotFound, errs.ErrNotLeader}

// forwardPromote asks the leader, over the peer URLs, to promote id.
func (a *MembershipAdmin) forwardPromote(ctx context.Context, id uint64) ([]*membership.Member, error) {
	leader := memberByID(a.member.members(), a.member.Leader())
	if leader == nil {
		return nil, errs.ErrNoLeader
	}
	var lastErr error = errs.ErrNoLeader
	for _, u := range leader.PeerURLs {
		members, err := postPromote(ctx, a.peers, u, id)
		if err == nil {
			return members, nil
		}
		for _, known := range promoteErrors {
			if errors.Is(err, known) {
				return nil, known
			}
		}
		lastErr = err
	}
	return nil, lastErr
}

func postPromote(ctx context.Context, hc *http.Client, peerURL string, id uint64) ([]*membership.Member, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, peerURL+promotePath+strconv.FormatUint(id, 10), nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		text := strings.TrimSpace(string(body))
		for _, known := range promoteErrors {
			if text == known.Error() {
				return nil, known
			}
		}
		return nil, fmt.Errorf("leader refused promotion: %s: %s", resp.Status, text)
	}
	var members []*membership.Member
	if err := json.Unmarshal(body, &members); err != nil {
		return nil, err
	}
	return members, nil
}

// servePromote is the leader's side of forwardPromote.
func (a *MembershipAdmin) servePromote(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	id, err := strconv.ParseUint(strings.TrimPrefix(r.URL.Path, promotePath), 10, 64)
	if err != nil {
		http.Error(w, "bad member id", http.StatusBadRequest)
		return
	}
	if !a.member.leads() {
		http.Error(w, errs.ErrNotLeader.Error(), http.StatusPreconditionFailed)
		return
	}
	members, err := a.MemberPromote(r.Context(), id)
	switch {
	case errors.Is(err, errs.ErrIDNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
	case err != nil:
		http.Error(w, err.Error(), http.StatusPreconditionFailed)
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(members)
	}
}
