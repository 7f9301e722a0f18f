package v3rpc

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Chunking of RangeStream. A chunk holds at most rangeStreamMaxKVs pairs and,
// unless a single pair is larger, about rangeStreamMaxBytes of them. Pages
// read from the member start small and grow while they stay small, so a
// range of huge values never sits in memory a thousand at a time.
const (
	rangeStreamMaxKVs       = 1000
	rangeStreamMaxBytes     = 1 << 20
	rangeStreamFirstPageKVs = 128
)

var (
	errRangeStreamSort      = status.Error(codes.Unimplemented, "RangeStream does not support custom sort orders")
	errRangeStreamRevFilter = status.Error(codes.Unimplemented, "RangeStream does not support revision filters")
)

// checkRangeStreamRequest rejects what cannot be served page by page, after
// the checks Range makes: only sort order NONE (any target) and ASCEND by
// KEY are allowed, as in etcd.
func checkRangeStreamRequest(r *pb.RangeRequest) error {
	if err := rangeFlaws(r); err != nil {
		return err
	}
	keyOrder := r.SortOrder == pb.RangeRequest_NONE ||
		(r.SortOrder == pb.RangeRequest_ASCEND && r.SortTarget == pb.RangeRequest_KEY)
	if !keyOrder {
		return errRangeStreamSort
	}
	if r.MinModRevision != 0 || r.MaxModRevision != 0 || r.MinCreateRevision != 0 || r.MaxCreateRevision != 0 {
		return errRangeStreamRevFilter
	}
	return nil
}

// RangeStream serves the result of a Range as a stream of chunks, all read at
// one revision. The first page fixes the revision (linearizable unless the
// client asked for serializable); later pages are serializable reads at that
// revision, each starting just after the last key sent. Header, More and
// Count travel only in the last chunk, so a stream that fails midway never
// looks complete.
func (ks *kvServer) RangeStream(r *pb.RangeRequest, stream grpc.ServerStreamingServer[pb.RangeStreamResponse]) error {
	if err := checkRangeStreamRequest(r); err != nil {
		return err
	}
	send := func(rr *pb.RangeResponse) error {
		return stream.Send(&pb.RangeStreamResponse{RangeResponse: rr})
	}
	if r.CountOnly {
		// Nothing to page through: the unary answer is the one chunk.
		resp, err := ks.Range(stream.Context(), r)
		if err != nil {
			return err
		}
		return send(resp)
	}
	if r.SortOrder == pb.RangeRequest_NONE && r.SortTarget != pb.RangeRequest_KEY {
		sp := &sortedPager{s: ks.s, kv: ks.kv, send: send, targetBytes: ks.maxRequestBytes}
		return sp.run(stream.Context(), r)
	}
	rs := &rangeStreamer{s: ks.s, kv: ks.kv, send: send, limit: max(0, r.Limit), pageKVs: rangeStreamFirstPageKVs}
	return rs.run(stream.Context(), r)
}

// rangeStreamer pages through one RangeStream.
type rangeStreamer struct {
	s    Server   // the headers
	kv   KVServer // the pages
	send func(*pb.RangeResponse) error

	limit   int64 // the client's limit, 0 for none
	sent    int64 // pairs sent so far
	pageKVs int64 // size of the next page
}

func (rs *rangeStreamer) run(ctx context.Context, r *pb.RangeRequest) error {
	page := proto.Clone(r).(*pb.RangeRequest)
	page.SortOrder, page.SortTarget = pb.RangeRequest_NONE, pb.RangeRequest_KEY
	page.Limit = rs.nextPageLimit()
	first, err := rs.kv.Range(ctx, page)
	if err != nil {
		return err
	}
	final := &pb.RangeResponse{Header: completeHeader(rs.s, first.Header), Count: first.Count}
	// A Range at an older revision reports the current revision in its
	// header, so the revision to pin is the requested one when there is one.
	if page.Revision <= 0 {
		page.Revision = final.Header.Revision
	}
	page.Serializable = true

	resp := first
	for {
		last := rs.isLastPage(resp)
		if err := rs.sendPage(resp.Kvs, last, final); err != nil {
			return err
		}
		if last {
			return nil
		}
		page.Key = keyAfter(resp.Kvs[len(resp.Kvs)-1].Key)
		page.Limit = rs.nextPageLimit()
		if resp, err = rs.kv.Range(ctx, page); err != nil {
			return err
		}
	}
}

// isLastPage reports whether resp ends the stream: the member has nothing
// after it, or the client's limit is reached.
func (rs *rangeStreamer) isLastPage(resp *pb.RangeResponse) bool {
	if !resp.More || len(resp.Kvs) == 0 {
		return true
	}
	return rs.limit > 0 && rs.sent+int64(len(resp.Kvs)) >= rs.limit
}

func (rs *rangeStreamer) nextPageLimit() int64 {
	if rs.limit > 0 {
		return min(rs.pageKVs, rs.limit-rs.sent)
	}
	return rs.pageKVs
}

// sendPage sends kvs in chunks of at most rangeStreamMaxBytes (a larger pair
// goes alone). On the last page the closing chunk carries the header, the
// count and whether the client's limit cut the result short; it goes out even
// when it holds no pairs.
func (rs *rangeStreamer) sendPage(kvs []*mvccpb.KeyValue, last bool, final *pb.RangeResponse) error {
	if rs.limit > 0 && rs.sent+int64(len(kvs)) > rs.limit {
		kvs = kvs[:rs.limit-rs.sent]
	}
	pageBytes := 0
	for {
		n, size := chunkLen(kvs)
		chunk := &pb.RangeResponse{Kvs: kvs[:n]}
		kvs = kvs[n:]
		pageBytes += size
		rs.sent += int64(n)
		closing := last && len(kvs) == 0
		if closing {
			chunk.Header, chunk.Count, chunk.More = final.Header, final.Count, rs.sent < final.Count
		}
		if n > 0 || closing {
			if err := rs.send(chunk); err != nil {
				return err
			}
		}
		if len(kvs) == 0 {
			break
		}
	}
	rs.adaptPageSize(pageBytes)
	return nil
}

// adaptPageSize sizes the next page so that it is about one chunk: halve
// (or cut to fit) after a page too big, double after a page well below it.
func (rs *rangeStreamer) adaptPageSize(pageBytes int) {
	switch {
	case pageBytes > rangeStreamMaxBytes:
		rs.pageKVs = max(1, rs.pageKVs*rangeStreamMaxBytes/int64(pageBytes))
	case pageBytes < rangeStreamMaxBytes/2:
		rs.pageKVs = min(rangeStreamMaxKVs, rs.pageKVs*2)
	}
}

// keyAfter returns the smallest key greater than key.
func keyAfter(key []byte) []byte {
	next := make([]byte, len(key)+1)
	copy(next, key)
	return next
}

// chunkLen returns how many leading pairs of kvs fit in one chunk, and their
// size.
func chunkLen(kvs []*mvccpb.KeyValue) (n, size int) {
	for n < len(kvs) && n < rangeStreamMaxKVs {
		kvSize := proto.Size(kvs[n]) + 4 // tag and length prefix
		if n > 0 && size+kvSize > rangeStreamMaxBytes {
			break
		}
		n, size = n+1, size+kvSize
	}
	return n, size
}
