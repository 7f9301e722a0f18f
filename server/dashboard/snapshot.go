package dashboard

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// serveSnapshot streams the member's database as Maintenance.Snapshot
// sends it, as a file download (POST, so that the token travels in the
// Authorization header rather than in a URL). Only an admin may: the gRPC
// server checks, as for etcdctl snapshot save.
func (d *Dashboard) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	if !allowMethods(w, r, http.MethodPost) {
		return
	}
	stream, err := pb.NewMaintenanceClient(d.cfg.Local).Snapshot(callerContext(r), &pb.SnapshotRequest{})
	if err != nil {
		writeGRPCError(w, err)
		return
	}
	// The first message tells whether the call was allowed; headers wait
	// for it so that a refusal is an error answer, not a broken file.
	first, err := stream.Recv()
	if err != nil {
		writeGRPCError(w, err)
		return
	}
	name := "cairn-snapshot-" + time.Now().UTC().Format("20060102T150405Z") + ".db"
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.Header().Set("Cache-Control", "no-store")
	if first.RemainingBytes == 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(first.Blob)))
	}
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(first.Blob); err != nil {
		return
	}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			// Too late for an error answer: cut the download short so
			// the browser reports it failed rather than saving a
			// truncated file as complete.
			d.cfg.Logger.Warn("dashboard snapshot download failed")
			panic(http.ErrAbortHandler)
		}
		if _, err := w.Write(resp.Blob); err != nil {
			return
		}
	}
}
