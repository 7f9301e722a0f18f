package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/api/v3electionpb"
	"github.com/cairnkv/cairn/api/v3lockpb"
)

// etcd's gateway serves the Lock and Election services too, from handlers
// generated into etcd's server module. cairn's are written here on
// grpc-gateway's runtime: POST the request as JSON, get the response (one
// object per line for Observe).

// registerLockHandlers serves /v3/lock/lock and /v3/lock/unlock.
func registerLockHandlers(_ context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error {
	c := v3lockpb.NewLockClient(conn)
	return errors.Join(
		mux.HandlePath(http.MethodPost, "/v3/lock/lock", unaryRoute(mux, v3lockpb.Lock_Lock_FullMethodName, c.Lock)),
		mux.HandlePath(http.MethodPost, "/v3/lock/unlock", unaryRoute(mux, v3lockpb.Lock_Unlock_FullMethodName, c.Unlock)),
	)
}

// registerElectionHandlers serves /v3/election/{campaign, proclaim, leader,
// observe, resign}.
func registerElectionHandlers(_ context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error {
	c := v3electionpb.NewElectionClient(conn)
	return errors.Join(
		mux.HandlePath(http.MethodPost, "/v3/election/campaign", unaryRoute(mux, v3electionpb.Election_Campaign_FullMethodName, c.Campaign)),
		mux.HandlePath(http.MethodPost, "/v3/election/proclaim", unaryRoute(mux, v3electionpb.Election_Proclaim_FullMethodName, c.Proclaim)),
		mux.HandlePath(http.MethodPost, "/v3/election/leader", unaryRoute(mux, v3electionpb.Election_Leader_FullMethodName, c.Leader)),
		mux.HandlePath(http.MethodPost, "/v3/election/resign", unaryRoute(mux, v3electionpb.Election_Resign_FullMethodName, c.Resign)),
		mux.HandlePath(http.MethodPost, "/v3/election/observe", observeRoute(mux, c)),
	)
}

// unaryRoute decodes the body into a Req, makes the call and writes its
// answer or error as grpc-gateway's generated handlers do.
func unaryRoute[Req any, Resp proto.Message, PReq interface {
	*Req
	proto.Message
}](mux *runtime.ServeMux, method string, call func(context.Context, PReq, ...grpc.CallOption) (Resp, error)) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		ctx, inbound, outbound, ok := annotate(mux, w, r, method)
		if !ok {
			return
		}
		req := PReq(new(Req))
		if err := decodeBody(inbound, r, req); err != nil {
			runtime.HTTPError(ctx, mux, outbound, w, r, err)
			return
		}
		var md runtime.ServerMetadata
		resp, err := call(ctx, req, grpc.Header(&md.HeaderMD), grpc.Trailer(&md.TrailerMD))
		ctx = runtime.NewServerMetadataContext(ctx, md)
		if err != nil {
			runtime.HTTPError(ctx, mux, outbound, w, r, err)
			return
		}
		runtime.ForwardResponseMessage(ctx, mux, outbound, w, r, resp)
	}
}

// observeRoute streams Observe's responses.
func observeRoute(mux *runtime.ServeMux, c v3electionpb.ElectionClient) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		ctx, inbound, outbound, ok := annotate(mux, w, r, v3electionpb.Election_Observe_FullMethodName)
		if !ok {
			return
		}
		req := &v3electionpb.LeaderRequest{}
		if err := decodeBody(inbound, r, req); err != nil {
			runtime.HTTPError(ctx, mux, outbound, w, r, err)
			return
		}
		stream, err := c.Observe(ctx, req)
		if err != nil {
			runtime.HTTPError(ctx, mux, outbound, w, r, err)
			return
		}
		header, err := stream.Header()
		if err != nil {
			runtime.HTTPError(ctx, mux, outbound, w, r, err)
			return
		}
		ctx = runtime.NewServerMetadataContext(ctx, runtime.ServerMetadata{HeaderMD: header})
		runtime.ForwardResponseStream(ctx, mux, outbound, w, r, func() (proto.Message, error) { return stream.Recv() })
	}
}

// annotate turns the HTTP request's metadata (the Authorization header)
// into the call's context and picks the marshalers.
func annotate(mux *runtime.ServeMux, w http.ResponseWriter, r *http.Request, method string) (context.Context, runtime.Marshaler, runtime.Marshaler, bool) {
	inbound, outbound := runtime.MarshalerForRequest(mux, r)
	ctx, err := runtime.AnnotateContext(r.Context(), mux, r, method, runtime.WithHTTPPathPattern(r.URL.Path))
	if err != nil {
		runtime.HTTPError(r.Context(), mux, outbound, w, r, err)
		return nil, nil, nil, false
	}
	return ctx, inbound, outbound, true
}

// decodeBody reads the JSON request; an empty body is an empty request.
func decodeBody(m runtime.Marshaler, r *http.Request, req proto.Message) error {
	if err := m.NewDecoder(r.Body).Decode(req); err != nil && !errors.Is(err, io.EOF) {
		return status.Errorf(codes.InvalidArgument, "%v", err)
	}
	return nil
}
