package v3rpc

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// watchEventsField is the field number of WatchResponse.events.
const watchEventsField = 11

// fragments splits resp into responses smaller than limit bytes each, in
// event order, with Fragment set on all but the last; a fragment exceeds
// limit only when it is a single event. A response smaller than limit or
// with fewer than two events goes out whole, as in etcd. The fragments
// share resp's header and events.
func fragments(resp *pb.WatchResponse, limit int) []*pb.WatchResponse {
	if len(resp.Events) < 2 || proto.Size(resp) < limit {
		return []*pb.WatchResponse{resp}
	}
	base := proto.Size(emptyFragment(resp))
	var out []*pb.WatchResponse
	cur, size := emptyFragment(resp), base
	for _, ev := range resp.Events {
		n := eventWireSize(ev)
		if len(cur.Events) > 0 && size+n >= limit {
			out = append(out, cur)
			cur, size = emptyFragment(resp), base
		}
		cur.Events = append(cur.Events, ev)
		size += n
	}
	cur.Fragment = false
	return append(out, cur)
}

// emptyFragment is resp without events, marked as a fragment. Each
// fragment is its own message: gRPC may still hold one while the next is
// built.
func emptyFragment(resp *pb.WatchResponse) *pb.WatchResponse {
	return &pb.WatchResponse{
		Header: resp.Header, WatchId: resp.WatchId, Created: resp.Created, Canceled: resp.Canceled,
		CompactRevision: resp.CompactRevision, CancelReason: resp.CancelReason, Fragment: true,
	}
}

// eventWireSize is what one event adds to an encoded WatchResponse.
func eventWireSize(ev *mvccpb.Event) int {
	return protowire.SizeTag(watchEventsField) + protowire.SizeBytes(proto.Size(ev))
}
