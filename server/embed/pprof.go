package embed

import (
	"net/http"
	"net/http/pprof"
	"strings"

	"golang.org/x/net/trace"
)

// debugEndpoints wraps the client HTTP handler with the debug endpoints
// etcd serves on its client URLs: Go's profiler under /debug/pprof/ with
// --enable-pprof or --log-level=debug, and with --log-level=debug also the
// request and event traces of golang.org/x/net/trace (/debug/requests,
// /debug/events; StartMember has gRPC trace every RPC then). Everything
// else goes to next.
func debugEndpoints(next http.Handler, pprofOn, logDebug bool) http.Handler {
	mux := http.NewServeMux()
	if pprofOn || logDebug {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if logDebug {
		mux.HandleFunc("/debug/requests", func(w http.ResponseWriter, r *http.Request) { trace.Render(w, r, true) })
		mux.HandleFunc("/debug/events", func(w http.ResponseWriter, r *http.Request) { trace.RenderEvents(w, r, true) })
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isDebugPath(r.URL.Path, pprofOn || logDebug, logDebug) {
			mux.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isDebugPath(path string, pprofOn, traceOn bool) bool {
	switch {
	case pprofOn && strings.HasPrefix(path, "/debug/pprof/"):
		return true
	case traceOn && (path == "/debug/requests" || path == "/debug/events"):
		return true
	}
	return false
}
