package dashboard

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// historyLimit is the most revisions of one key /ui/api/history returns
// (the newest ones); more would not be read by a person anyway.
const historyLimit = 200

// historyTimeout bounds the watch that reads a key's history.
const historyTimeout = 10 * time.Second

// historyProgressEvery is how often the history watch asks whether it has
// caught up with the current revision.
const historyProgressEvery = 50 * time.Millisecond

// keyVersion is one change of a key.
type keyVersion struct {
	Type           string `json:"type"` // PUT or DELETE
	ModRevision    int64  `json:"modRevision"`
	CreateRevision int64  `json:"createRevision,omitempty"`
	Version        int64  `json:"version,omitempty"`
	Lease          string `json:"lease,omitempty"`
	Value          string `json:"value,omitempty"` // base64, as the gateway
}

// historyView is the answer of /ui/api/history.
type historyView struct {
	Key             string       `json:"key"`
	Revision        int64        `json:"revision"`        // current revision when read
	CompactRevision int64        `json:"compactRevision"` // nothing before it is kept
	Truncated       bool         `json:"truncated"`       // older changes left out (historyLimit)
	Versions        []keyVersion `json:"versions"`        // newest first
}

// serveHistory answers with a key's changes from the compaction point to
// now (?key=base64). It reads them with a watch from the oldest revision
// kept, made with the caller's token: a caller without read permission on
// the key gets the watch's permission error and nothing else.
func (d *Dashboard) serveHistory(w http.ResponseWriter, r *http.Request) {
	if !allowMethods(w, r, http.MethodGet) {
		return
	}
	key, err := base64.StdEncoding.DecodeString(r.URL.Query().Get("key"))
	if err != nil || len(key) == 0 {
		writeError(w, http.StatusBadRequest, "key must be given, base64-encoded")
		return
	}
	ctx, cancel := context.WithTimeout(callerContext(r), historyTimeout)
	defer cancel()
	// The range checks read permission and fixes the revision to read to.
	rr, err := pb.NewKVClient(d.cfg.Local).Range(ctx, &pb.RangeRequest{Key: key, KeysOnly: true})
	if err != nil {
		writeGRPCError(w, err)
		return
	}
	hv, err := d.readHistory(ctx, key, rr.Header.Revision)
	if err != nil {
		writeGRPCError(w, err)
		return
	}
	hv.Key = base64.StdEncoding.EncodeToString(key)
	writeJSON(w, http.StatusOK, hv)
}

// readHistory watches key from revision 1; the member answers that the
// history is compacted and where, and the watch starts again from there.
func (d *Dashboard) readHistory(ctx context.Context, key []byte, upTo int64) (*historyView, error) {
	hv := &historyView{Revision: upTo, Versions: []keyVersion{}}
	from := int64(1)
	for attempt := 0; attempt < 3; attempt++ {
		events, compacted, err := d.watchUntil(ctx, key, from, upTo)
		if err != nil {
			return nil, err
		}
		if compacted > 0 {
			hv.CompactRevision, from = compacted, compacted
			continue
		}
		if len(events) > historyLimit {
			events, hv.Truncated = events[len(events)-historyLimit:], true
		}
		for i := len(events) - 1; i >= 0; i-- {
			hv.Versions = append(hv.Versions, versionOf(events[i]))
		}
		return hv, nil
	}
	return nil, errors.New("the history kept being compacted while it was read")
}

// watchUntil collects key's events from revision from up to upTo. It asks
// for progress until the member reports a revision at or past upTo: the
// member sends every event of the watcher before such a notification.
// compacted is the compaction point when from is older than it.
func (d *Dashboard) watchUntil(ctx context.Context, key []byte, from, upTo int64) (events []*mvccpb.Event, compacted int64, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := pb.NewWatchClient(d.cfg.Local).Watch(ctx)
	if err != nil {
		return nil, 0, err
	}
	create := &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{Key: key, StartRevision: from}}}
	if err := stream.Send(create); err != nil {
		return nil, 0, err
	}
	go askProgress(ctx, stream)
	for {
		resp, err := stream.Recv()
		if err != nil {
			return nil, 0, err
		}
		switch {
		case resp.CompactRevision > 0:
			return nil, resp.CompactRevision, nil
		case resp.Canceled:
			return nil, 0, errors.New(resp.CancelReason)
		}
		for _, ev := range resp.Events {
			if ev.Kv.ModRevision > upTo {
				return events, 0, nil
			}
			events = append(events, ev)
		}
		if isProgress(resp) && resp.Header.Revision >= upTo {
			return events, 0, nil
		}
	}
}

// isProgress reports a progress notification (no events, not a create).
func isProgress(resp *pb.WatchResponse) bool {
	return len(resp.Events) == 0 && !resp.Created && !resp.Canceled && resp.Header != nil
}

func askProgress(ctx context.Context, stream pb.Watch_WatchClient) {
	t := time.NewTicker(historyProgressEvery)
	defer t.Stop()
	req := &pb.WatchRequest{RequestUnion: &pb.WatchRequest_ProgressRequest{ProgressRequest: &pb.WatchProgressRequest{}}}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if stream.Send(req) != nil {
				return
			}
		}
	}
}

func versionOf(ev *mvccpb.Event) keyVersion {
	kv := ev.Kv
	v := keyVersion{Type: ev.Type.String(), ModRevision: kv.ModRevision}
	if ev.Type == mvccpb.PUT {
		v.CreateRevision, v.Version = kv.CreateRevision, kv.Version
		v.Value = base64.StdEncoding.EncodeToString(kv.Value)
		if kv.Lease != 0 {
			v.Lease = strconv.FormatInt(kv.Lease, 10)
		}
	}
	return v
}
