package httpapi

import (
	"encoding/json"
	"expvar"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"go.etcd.io/raft/v3"
)

// PathDebugVars is etcd's expvar endpoint.
const PathDebugVars = "/debug/vars"

// RaftStatusReporter may be implemented by a Health to report raft's view
// of the member under "raft.status" on /debug/vars.
type RaftStatusReporter interface {
	RaftStatus() (raft.Status, error)
}

// debugVarsHandler serves /debug/vars as etcd does: Go's expvar document
// (cmdline, memstats and whatever else the process publishes) plus the
// member's own "raft.status" and "file_descriptor_limit". etcd publishes
// those two as process-wide expvars; here they come from the member the
// handler belongs to, so that several members in one process (tests) each
// report their own, and nothing is registered globally.
type debugVarsHandler struct{ h Health }

func (d debugVarsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !allowGet(w, r) {
		return
	}
	vars := map[string]string{}
	expvar.Do(func(kv expvar.KeyValue) { vars[kv.Key] = kv.Value.String() })
	vars["raft.status"] = d.raftStatusJSON()
	vars["file_descriptor_limit"] = strconv.FormatUint(fdLimit(), 10)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write([]byte(renderVars(vars)))
}

// raftStatusJSON is raft.Status in raft's own JSON form, null when the
// member cannot tell (stopped, or no raft at all).
func (d debugVarsHandler) raftStatusJSON() string {
	rs, ok := d.h.(RaftStatusReporter)
	if !ok {
		return "null"
	}
	st, err := rs.RaftStatus()
	if err != nil {
		return "null"
	}
	return jsonOrNull(st)
}

func jsonOrNull(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// renderVars writes vars in expvar's layout: one `"key": value` per line,
// keys sorted, the whole wrapped in braces.
func renderVars(vars map[string]string) string {
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{\n")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",\n")
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteString(": ")
		b.WriteString(vars[k])
	}
	b.WriteString("\n}\n")
	return b.String()
}
