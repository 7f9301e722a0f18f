package dashboard

import (
	"net/http"
	"strconv"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// serveMoveLeader hands the leadership to ?target=<member ID, decimal>.
// MoveLeader is served by the leader only, so the call goes to the
// leader, with the caller's token: the leader checks it, as it checks
// etcdctl move-leader. The page can thus move the leader from any member.
func (d *Dashboard) serveMoveLeader(w http.ResponseWriter, r *http.Request) {
	if !allowMethods(w, r, http.MethodPost) {
		return
	}
	target, err := strconv.ParseUint(r.URL.Query().Get("target"), 10, 64)
	if err != nil || target == 0 {
		writeError(w, http.StatusBadRequest, "target must be a member ID (decimal)")
		return
	}
	ctx := callerContext(r)
	local, err := pb.NewMaintenanceClient(d.cfg.Local).Status(ctx, &pb.StatusRequest{})
	if err != nil {
		writeGRPCError(w, err)
		return
	}
	mt := pb.NewMaintenanceClient(d.cfg.Local)
	if local.Leader != local.Header.MemberId {
		leader, err := d.memberByID(r, local.Leader)
		if err != nil {
			writeGRPCError(w, err)
			return
		}
		if leader == nil {
			writeError(w, http.StatusServiceUnavailable, "the cluster has no leader")
			return
		}
		conn, err := d.remotes.conn(leader)
		if err != nil {
			writeError(w, http.StatusBadGateway, err.Error())
			return
		}
		mt = pb.NewMaintenanceClient(conn)
	}
	resp, err := mt.MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: target})
	if err != nil {
		writeGRPCError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"leader": strconv.FormatUint(target, 10), "revision": strconv.FormatInt(resp.Header.GetRevision(), 10)})
}

// memberByID finds a member in the member list (nil when absent).
func (d *Dashboard) memberByID(r *http.Request, id uint64) (*pb.Member, error) {
	list, err := pb.NewClusterClient(d.cfg.Local).MemberList(callerContext(r), &pb.MemberListRequest{})
	if err != nil {
		return nil, err
	}
	for _, m := range list.Members {
		if m.ID == id {
			return m, nil
		}
	}
	return nil, nil
}
