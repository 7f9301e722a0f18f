package etcdserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/lease"
)

// Lease requests a follower forwards to the leader over the peer URLs, in
// etcd's format: POST /leases carries a LeaseKeepAliveRequest and answers a
// LeaseKeepAliveResponse; POST /leases/internal carries etcd's
// LeaseInternalRequest (a LeaseTimeToLiveRequest in field 1) and answers a
// LeaseInternalResponse (a LeaseTimeToLiveResponse in field 1). Both are
// protobuf bodies; an unknown lease answers 404 with etcd's text.

const (
	leasesPath         = "/leases"
	leasesInternalPath = "/leases/internal"
	protobufType       = "application/protobuf"
	leaseNotFoundText  = "lease not found"
)

func (l *LeaseService) forwardKeepAlive(ctx context.Context, id int64) (int64, error) {
	body, err := proto.Marshal(&pb.LeaseKeepAliveRequest{ID: id})
	if err != nil {
		return 0, err
	}
	out, err := l.postToLeader(ctx, leasesPath, body)
	if err != nil {
		return 0, err
	}
	resp := &pb.LeaseKeepAliveResponse{}
	if err := proto.Unmarshal(out, resp); err != nil {
		return 0, err
	}
	return resp.TTL, nil
}

func (l *LeaseService) forwardTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	inner, err := proto.Marshal(r)
	if err != nil {
		return nil, err
	}
	out, err := l.postToLeader(ctx, leasesInternalPath, protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), inner))
	if errors.Is(err, errs.ErrLeaseNotFound) {
		return &pb.LeaseTimeToLiveResponse{Header: l.member.Header(), ID: r.ID, TTL: -1}, nil
	}
	if err != nil {
		return nil, err
	}
	resp := &pb.LeaseTimeToLiveResponse{}
	if err := proto.Unmarshal(field1(out), resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// field1 returns the bytes of field 1 of a one-field message.
func field1(b []byte) []byte {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return nil
	}
	v, m := protowire.ConsumeBytes(b[n:])
	if m < 0 {
		return nil
	}
	return v
}

// postToLeader posts body to path on the leader's peer URLs.
func (l *LeaseService) postToLeader(ctx context.Context, path string, body []byte) ([]byte, error) {
	urls := l.leaderURLs.get(l.member.Leader(), l.member.memberPeerURLs)
	if len(urls) == 0 {
		return nil, errs.ErrNoLeader
	}
	var lastErr error = errs.ErrNoLeader
	for _, u := range urls {
		out, err := postProtobuf(ctx, l.peers, u+path, body)
		if err == nil || errors.Is(err, errs.ErrLeaseNotFound) {
			return out, err
		}
		lastErr = err
	}
	return nil, lastErr
}

func postProtobuf(ctx context.Context, hc *http.Client, url string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", protobufType)
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errs.ErrTimeout
		}
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return out, nil
	case http.StatusNotFound:
		return nil, errs.ErrLeaseNotFound
	}
	return nil, fmt.Errorf("leader answered %s: %s", resp.Status, bytes.TrimSpace(out))
}

// serveLeaseRenew is the leader's side of forwardKeepAlive.
func (l *LeaseService) serveLeaseRenew(w http.ResponseWriter, r *http.Request) {
	req := &pb.LeaseKeepAliveRequest{}
	if !readProtobuf(w, r, req) {
		return
	}
	if !l.member.leads() {
		http.Error(w, errs.ErrNotLeader.Error(), http.StatusPreconditionFailed)
		return
	}
	ttl, err := l.member.currentLessor().Renew(r.Context(), lease.LeaseID(req.ID))
	if err != nil {
		writeLeaseError(w, err)
		return
	}
	writeProtobuf(w, &pb.LeaseKeepAliveResponse{Header: l.member.Header(), ID: req.ID, TTL: ttl})
}

// serveLeaseInternal is the leader's side of forwardTimeToLive.
func (l *LeaseService) serveLeaseInternal(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "error reading body", http.StatusBadRequest)
		return
	}
	req := &pb.LeaseTimeToLiveRequest{}
	if err := proto.Unmarshal(field1(body), req); err != nil {
		http.Error(w, "error unmarshalling request", http.StatusBadRequest)
		return
	}
	if !l.member.leads() {
		http.Error(w, errs.ErrNotLeader.Error(), http.StatusPreconditionFailed)
		return
	}
	resp := l.localTimeToLive(req)
	if resp.TTL == -1 {
		http.Error(w, leaseNotFoundText, http.StatusNotFound)
		return
	}
	inner, err := proto.Marshal(resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", protobufType)
	w.Write(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), inner))
}

func readProtobuf(w http.ResponseWriter, r *http.Request, m proto.Message) bool {
	if r.Method != http.MethodPost {
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = proto.Unmarshal(body, m)
	}
	if err != nil {
		http.Error(w, "error unmarshalling request", http.StatusBadRequest)
		return false
	}
	return true
}

func writeProtobuf(w http.ResponseWriter, m proto.Message) {
	b, err := proto.Marshal(m)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", protobufType)
	w.Write(b)
}

func writeLeaseError(w http.ResponseWriter, err error) {
	if errors.Is(err, errs.ErrLeaseNotFound) {
		http.Error(w, leaseNotFoundText, http.StatusNotFound)
		return
	}
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
