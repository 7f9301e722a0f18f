package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// writeSummary writes report.md and report.json to dir.
func writeSummary(dir string, res *result, runs []run) error {
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(raw, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(markdown(res, runs)), 0o644)
}

func markdown(res *result, runs []run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# cairn benchmark report\n\n")
	fmt.Fprintf(&b, "Started %s, took %.0f s. %s/%s, %d CPUs, %s. Load generator and servers share the machine.\n\n",
		res.Started.Format("2006-01-02 15:04 MST"), res.Duration, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(&b, "Latencies in milliseconds; \"failed\" counts failed and unsent requests (and missing watch events). ")
	fmt.Fprintf(&b, "Every cluster is fresh; 3-member runs spread connections over all members (--all-members). ")
	fmt.Fprintf(&b, "Each case's full report is in the directory named after its run.\n")
	servers := serverNames(runs)
	for _, members := range []int{1, 3} {
		fmt.Fprintf(&b, "\n## %d member%s\n\n", members, plural(members))
		writeTable(&b, res.Rows, servers, members)
	}
	fmt.Fprintf(&b, "\n## Server peak RSS (VmHWM, over the whole suite)\n\n| run | per member (MiB) |\n|---|---|\n")
	for _, label := range res.Runs {
		var mib []string
		for _, bytes := range res.Memory[label] {
			mib = append(mib, fmt.Sprintf("%.1f", float64(bytes)/(1<<20)))
		}
		fmt.Fprintf(&b, "| %s | %s |\n", label, strings.Join(mib, ", "))
	}
	return b.String()
}

func serverNames(runs []run) []string {
	var out []string
	for _, r := range runs {
		if len(out) == 0 || out[len(out)-1] != r.server {
			out = append(out, r.server)
		}
	}
	return out
}

// writeTable prints one row per case, with each server's columns side by
// side.
func writeTable(b *strings.Builder, rows []row, servers []string, members int) {
	cols := []string{"ops/s", "p50", "p90", "p99", "p99.9", "failed"}
	fmt.Fprintf(b, "| case |")
	for _, s := range servers {
		for _, c := range cols {
			fmt.Fprintf(b, " %s %s |", s, c)
		}
	}
	fmt.Fprintf(b, "\n|---|%s\n", strings.Repeat("--:|", len(cols)*len(servers)))
	for _, name := range caseOrder(rows) {
		fmt.Fprintf(b, "| %s |", name)
		for _, s := range servers {
			r, ok := findRow(rows, s, members, name)
			if !ok {
				fmt.Fprintf(b, "%s", strings.Repeat(" |", len(cols)))
				continue
			}
			fmt.Fprintf(b, " %.0f | %s | %s | %s | %s | %d |", r.PerSec, ms(r.P50), ms(r.P90), ms(r.P99), ms(r.P999), r.Failed)
		}
		fmt.Fprintln(b)
	}
}

func caseOrder(rows []row) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.Case] {
			seen[r.Case] = true
			out = append(out, r.Case)
		}
	}
	return out
}

func findRow(rows []row, server string, members int, name string) (row, bool) {
	for _, r := range rows {
		if r.Server == server && r.Members == members && r.Case == name {
			return r, true
		}
	}
	return row{}, false
}

func ms(secs float64) string { return fmt.Sprintf("%.2f", secs*1000) }
