package etcdserver

import (
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Field numbers of etcd's InternalRaftRequest and RequestHeader that
// requestIDOf reads.
const (
	internalRequestIDField     = 1   // InternalRaftRequest.ID (old proposals)
	internalRequestHeaderField = 100 // InternalRaftRequest.header
	requestHeaderIDField       = 1   // RequestHeader.ID
)

// localRequests holds the requests this member proposed and has not yet
// applied, by request ID. Applying one of its own entries then reuses the
// request instead of decoding the entry again: the entry is the request's
// encoding, made after its last change, so both apply alike.
type localRequests struct {
	mu   sync.Mutex
	reqs map[uint64]*pb.InternalRaftRequest
}

func newLocalRequests() *localRequests {
	return &localRequests{reqs: make(map[uint64]*pb.InternalRaftRequest)}
}

// add keeps r, which must not change anymore, under id.
func (l *localRequests) add(id uint64, r *pb.InternalRaftRequest) {
	l.mu.Lock()
	l.reqs[id] = r
	l.mu.Unlock()
}

// take returns and forgets the request kept under id, nil if there is none.
func (l *localRequests) take(id uint64) *pb.InternalRaftRequest {
	l.mu.Lock()
	r := l.reqs[id]
	delete(l.reqs, id)
	l.mu.Unlock()
	return r
}

// decode returns the request an entry encodes: this member's own
// proposal as it was proposed (no decoding), else the decoded entry
// (by hand for the common requests, else by proto).
func (l *localRequests) decode(data []byte) (*pb.InternalRaftRequest, error) {
	if id, ok := requestIDOf(data); ok && id != 0 {
		if r := l.take(id); r != nil {
			return r, nil
		}
	}
	if r, ok := decodeCommonRequest(data); ok {
		return r, nil
	}
	r := &pb.InternalRaftRequest{}
	if err := proto.Unmarshal(data, r); err != nil {
		return nil, err
	}
	return r, nil
}

// requestIDOf reads the request ID of an encoded InternalRaftRequest (the
// header's, else the old top-level one) without decoding the rest. ok is
// false if data does not parse.
func requestIDOf(data []byte) (id uint64, ok bool) {
	var topID uint64
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return 0, false
		}
		data = data[n:]
		switch {
		case num == internalRequestIDField && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(data)
			if m < 0 {
				return 0, false
			}
			topID, n = v, m
		case num == internalRequestHeaderField && typ == protowire.BytesType:
			hdr, m := protowire.ConsumeBytes(data)
			if m < 0 {
				return 0, false
			}
			if hid, ok := headerIDOf(hdr); !ok {
				return 0, false
			} else if hid != 0 {
				id = hid
			}
			n = m
		default:
			n = protowire.ConsumeFieldValue(num, typ, data)
		}
		if n < 0 {
			return 0, false
		}
		data = data[n:]
	}
	if id == 0 {
		id = topID
	}
	return id, true
}

// headerIDOf reads the ID of an encoded RequestHeader.
func headerIDOf(data []byte) (id uint64, ok bool) {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return 0, false
		}
		data = data[n:]
		if num == requestHeaderIDField && typ == protowire.VarintType {
			id, n = protowire.ConsumeVarint(data)
		} else {
			n = protowire.ConsumeFieldValue(num, typ, data)
		}
		if n < 0 {
			return 0, false
		}
		data = data[n:]
	}
	return id, true
}
