//go:build failpoints

package failpoint

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// PathPrefix is where Mount serves the failpoints.
const PathPrefix = "/failpoints"

// maxSpecBytes bounds a PUT body: terms are a few dozen bytes.
const maxSpecBytes = 4096

// Mount serves gofail's HTTP interface under PathPrefix and everything
// else through h.
func Mount(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == PathPrefix || strings.HasPrefix(r.URL.Path, PathPrefix+"/") {
			serveFailpoints(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func serveFailpoints(w http.ResponseWriter, r *http.Request) {
	name := strings.Trim(strings.TrimPrefix(r.URL.Path, PathPrefix), "/")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch {
	case name == "" && r.Method == http.MethodGet:
		for _, line := range Armed() {
			io.WriteString(w, line+"\n")
		}
	case name == "":
		methodNotAllowed(w, http.MethodGet)
	case strings.HasSuffix(name, "/count"):
		serveCount(w, r, strings.TrimSuffix(name, "/count"))
	default:
		servePoint(w, r, name)
	}
}

func servePoint(w http.ResponseWriter, r *http.Request, name string) {
	switch r.Method {
	case http.MethodGet:
		spec, _, ok := Status(name)
		if !ok {
			http.Error(w, "failpoint "+name+" is not armed", http.StatusNotFound)
			return
		}
		io.WriteString(w, spec)
	case http.MethodPut:
		body, err := io.ReadAll(io.LimitReader(r.Body, maxSpecBytes+1))
		if err == nil && len(body) > maxSpecBytes {
			err = errors.New("terms too long")
		}
		if err == nil {
			err = Enable(name, string(body))
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case http.MethodDelete:
		if err := Disable(name); err != nil {
			http.Error(w, "failpoint "+name+" is not armed", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w, http.MethodGet+", "+http.MethodPut+", "+http.MethodDelete)
	}
}

func serveCount(w http.ResponseWriter, r *http.Request, name string) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, http.MethodGet)
		return
	}
	_, hits, ok := Status(name)
	if !ok {
		http.Error(w, "failpoint "+name+" is not armed", http.StatusNotFound)
		return
	}
	io.WriteString(w, strconv.Itoa(hits))
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
}
