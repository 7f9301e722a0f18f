package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// quotaLines returns the log lines about the backend quota, without the
// timestamp and caller, as "level msg {fields}".
func quotaLines(t *testing.T, logPath string) []string {
	t.Helper()
	data, err := os.ReadFile(logPath)
	must(t, err)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		msg, _ := e["msg"].(string)
		if !strings.Contains(msg, "quota") {
			continue
		}
		level := e["level"]
		for _, k := range []string{"level", "msg", "ts", "caller"} {
			delete(e, k)
		}
		out = append(out, fmt.Sprintf("%v %s %v", level, msg, e))
	}
	return out
}

// TestQuotaFlagLogsAsEtcd: a negative --quota-backend-bytes disables the
// quota and one above 8 GiB is warned about, in the lines etcd v3.7.3 logs.
func TestQuotaFlagLogsAsEtcd(t *testing.T) {
	etcd := etcdBinary(t)
	for _, quota := range []string{"-1", "9000000000"} {
		t.Run(quota, func(t *testing.T) {
			args := []string{"--quota-backend-bytes=" + quota}
			c := startMember(t, memberOpts{args: args})
			e := startMember(t, memberOpts{args: args, bin: etcd})
			got, want := quotaLines(t, c.logPath), quotaLines(t, e.logPath)
			if len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("cairn's quota lines:\n%q\netcd's:\n%q", got, want)
			}
		})
	}
}
