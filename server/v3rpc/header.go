package v3rpc

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// answer is a member's response to a unary call: a message with etcd's
// response header, which the layer completes before it goes out.
type answer interface {
	proto.Message
	GetHeader() *pb.ResponseHeader
}

// withHeader calls the member's f and completes the header of its response.
func withHeader[Req any, T answer](s Server, f func(context.Context, Req) (T, error), ctx context.Context, r Req) (T, error) {
	resp, err := f(ctx, r)
	return answered(s, resp, err)
}

// answered completes the header of the member's answer resp, unless the
// call failed.
func answered[T answer](s Server, resp T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	if h := resp.GetHeader(); h != nil {
		completeHeader(s, h) // in place: the common case, without reflection
		return resp, nil
	}
	m := resp.ProtoReflect()
	fd := m.Descriptor().Fields().ByName("header")
	m.Set(fd, protoreflect.ValueOfMessage(completeHeader(s, nil).ProtoReflect()))
	return resp, nil
}

// completeHeader returns h with every field the member left zero taken from
// the member's current header (a new header when h is nil). The member sets
// the revision a response was served at; the layer only adds the identity
// and term, and the current revision where the member had none to report.
func completeHeader(s Server, h *pb.ResponseHeader) *pb.ResponseHeader {
	if h == nil {
		h = &pb.ResponseHeader{}
	}
	if h.ClusterId != 0 && h.MemberId != 0 && h.Revision != 0 && h.RaftTerm != 0 {
		return h
	}
	current := s.Header()
	if current == nil {
		return h
	}
	if h.ClusterId == 0 {
		h.ClusterId = current.ClusterId
	}
	if h.MemberId == 0 {
		h.MemberId = current.MemberId
	}
	if h.Revision == 0 {
		h.Revision = current.Revision
	}
	if h.RaftTerm == 0 {
		h.RaftTerm = current.RaftTerm
	}
	return h
}
