package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// apiError is the body of a failed call, in the gateway's shape so that
// the page handles both alike.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// callerContext carries the request's Authorization header to gRPC as the
// token metadata etcd's clients send, as the gateway does.
func callerContext(r *http.Request) context.Context {
	ctx := r.Context()
	if tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); tok != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, rpctypes.TokenFieldNameGRPC, tok)
	}
	return ctx
}

// writeGRPCError answers with the gRPC status of err and the HTTP status
// the gateway would give it.
func writeGRPCError(w http.ResponseWriter, err error) {
	st := status.Convert(err)
	writeJSON(w, runtime.HTTPStatusFromCode(st.Code()), apiError{Code: int(st.Code()), Message: st.Message()})
}

func writeError(w http.ResponseWriter, httpStatus int, msg string) {
	writeJSON(w, httpStatus, apiError{Code: httpStatus, Message: msg})
}

func writeJSON(w http.ResponseWriter, httpStatus int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(httpStatus)
	json.NewEncoder(w).Encode(v)
}

// allowMethods answers 405 unless r uses one of the methods.
func allowMethods(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, http.StatusMethodNotAllowed, "method not allowed")
	return false
}
