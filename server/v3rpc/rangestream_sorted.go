package v3rpc

import (
	"context"
	"math"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// A RangeStream with sort order NONE and a target other than KEY is what
// etcd makes of it: Range sorts such a request ascending by the target, and
// etcd's RangeStream runs one such Range per chunk, so each chunk is sorted
// on its own and the next chunk starts after the last key of the sorted
// one. What the client gets therefore depends on where the chunks end, and
// sortedPager ends them where etcd does: ten pairs first, then twice or
// half the previous limit when a chunk came out under half or over twice
// --max-request-bytes. Each page is one chunk. The closing chunk carries
// the header, More, and a Count of the pairs sent plus those after the last
// key sent, which is etcd's figure.

// sortedFirstPageKVs is the limit of the first page, etcd's.
const sortedFirstPageKVs = 10

// sortedPager streams one target-sorted RangeStream.
type sortedPager struct {
	s           Server   // the headers
	kv          KVServer // the pages
	send        func(*pb.RangeResponse) error
	targetBytes int // --max-request-bytes
}

func (sp *sortedPager) run(ctx context.Context, r *pb.RangeRequest) error {
	total := r.Limit
	if total <= 0 {
		total = math.MaxInt64
	}
	page := proto.Clone(r).(*pb.RangeRequest)
	page.Limit = min(sortedFirstPageKVs, total)
	var (
		sent   int64
		header *pb.ResponseHeader
	)
	for {
		resp, err := sp.kv.Range(ctx, page)
		if err != nil {
			return err
		}
		if header == nil {
			// The first page fixes the revision, as in rangeStreamer.
			header = completeHeader(sp.s, resp.Header)
			if page.Revision <= 0 {
				page.Revision = header.Revision
			}
			page.Serializable = true
		}
		sent += int64(len(resp.Kvs))
		chunk := &pb.RangeResponse{Kvs: resp.Kvs}
		done := !resp.More || sent == total
		if done {
			if err := sp.close(ctx, chunk, page, resp, header, sent); err != nil {
				return err
			}
		}
		if err := sp.send(chunk); err != nil || done {
			return err
		}
		page.Key = keyAfter(resp.Kvs[len(resp.Kvs)-1].Key)
		page.Limit = min(nextSortedPageLimit(page.Limit, etcdChunkSize(resp, header.Revision), sp.targetBytes), total-sent)
	}
}

// close fills the closing chunk: header, More, and the count of the pairs
// sent plus those after the last key sent.
func (sp *sortedPager) close(ctx context.Context, chunk *pb.RangeResponse, page *pb.RangeRequest, resp *pb.RangeResponse, header *pb.ResponseHeader, sent int64) error {
	chunk.Header, chunk.More, chunk.Count = header, resp.More, sent
	if !resp.More {
		return nil
	}
	rest := &pb.RangeRequest{
		Key: keyAfter(resp.Kvs[len(resp.Kvs)-1].Key), RangeEnd: page.RangeEnd,
		Revision: page.Revision, Serializable: true, CountOnly: true,
	}
	cr, err := sp.kv.Range(ctx, rest)
	if err != nil {
		return err
	}
	chunk.Count += cr.Count
	return nil
}

// etcdChunkSize is the size etcd measures a page by: its Range answer as the
// storage layer builds it, with the revision as the only header field and a
// count of the pairs it read (one more than it returns when there are more).
func etcdChunkSize(resp *pb.RangeResponse, rev int64) int {
	read := int64(len(resp.Kvs))
	if resp.More {
		read++
	}
	return proto.Size(&pb.RangeResponse{
		Header: &pb.ResponseHeader{Revision: rev}, Kvs: resp.Kvs, More: resp.More, Count: read,
	})
}

// nextSortedPageLimit doubles the limit after a page under half of target
// and halves it after one over twice target; never below one.
func nextSortedPageLimit(limit int64, size, target int) int64 {
	switch {
	case size < target/2:
		limit *= 2
	case size > target*2:
		limit /= 2
	}
	return max(limit, 1)
}
