package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/cairnkv/cairn/tools/benchmark/stats"
)

// writeSummary writes report.md and report.json to dir.
func writeSummary(dir string, res *result) error {
	return stats.WriteReportFiles(dir, res, markdown(res))
}

// reference is the server the others are compared with.
const reference = "etcd"

func markdown(res *result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# cairn benchmark report\n\n")
	fmt.Fprintf(&b, "Started %s, took %.0f s, %d round%s (servers alternating at each cluster size). %s/%s, %d CPUs, %s. Load generator and servers share the machine.\n\n",
		res.Started.Format("2006-01-02 15:04 MST"), res.Duration, res.Rounds, plural(res.Rounds), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(&b, "Latencies in milliseconds; \"failed\" counts failed and unsent requests (and missing watch events). ")
	fmt.Fprintf(&b, "\"ops/CPU-s\" is successful operations per second of the servers' CPU (all members; a case with two rows shares its CPU). ")
	fmt.Fprintf(&b, "\"load\" is the 1-minute load average at the end of the case, \"other\" the cores that processes other than the servers and the load generator used during it. ")
	fmt.Fprintf(&b, "Every cluster is fresh; 3-member runs spread connections over all members (--all-members). ")
	fmt.Fprintf(&b, "Each case's full report is in the directory named after its run.\n")
	for _, members := range memberSizes(res.Rows) {
		fmt.Fprintf(&b, "\n## %d member%s\n", members, plural(members))
		if slices.Contains(res.Servers, reference) && len(res.Servers) > 1 {
			fmt.Fprintf(&b, "\n### Ratios to %s: median of the rounds [range]\n\n", reference)
			writeRatios(&b, res, members)
		}
		fmt.Fprintf(&b, "\n### Every round\n\n")
		writeRounds(&b, res.Rows, members)
	}
	writeMemory(&b, res)
	writeWatcherMemory(&b, res)
	return b.String()
}

// memberSizes lists the cluster sizes of rows, in the order they ran.
func memberSizes(rows []row) []int {
	var sizes []int
	for _, r := range rows {
		if !slices.Contains(sizes, r.Members) {
			sizes = append(sizes, r.Members)
		}
	}
	return sizes
}

// writeWatcherMemory lists the watch cases' server RSS growth per watcher,
// with the ratio to the reference's of the same round; nothing if no case
// measured it.
func writeWatcherMemory(b *strings.Builder, res *result) {
	perWatcher := func(r row) float64 { return r.BytesPerWatcher }
	var measured []row
	for _, r := range res.Rows {
		if r.BytesPerWatcher > 0 {
			measured = append(measured, r)
		}
	}
	if len(measured) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Server RSS per watcher (growth while the watchers were created, all members)\n\n| case | server | members | round | bytes per watcher |\n|---|---|--:|--:|--:|\n")
	for _, r := range measured {
		fmt.Fprintf(b, "| %s | %s | %d | %d | %.0f |\n", r.Case, r.Server, r.Members, r.Round, r.BytesPerWatcher)
	}
	if !slices.Contains(res.Servers, reference) {
		return
	}
	fmt.Fprintf(b, "\nRatio to %s (median of the rounds [range]):\n\n", reference)
	for _, s := range res.Servers {
		for _, members := range memberSizes(measured) {
			for _, name := range caseOrder(measured) {
				if sp, ok := spreadOf(ratios(measured, s, members, name, perWatcher)); ok && s != reference {
					fmt.Fprintf(b, "- %s, %s, %d member%s: %s\n", s, name, members, plural(members), sp)
				}
			}
		}
	}
}

// spread is the median of some per-round figures and their range.
type spread struct{ median, lo, hi float64 }

func spreadOf(xs []float64) (spread, bool) {
	if len(xs) == 0 {
		return spread{}, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := s[len(s)/2]
	if len(s)%2 == 0 {
		mid = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{mid, s[0], s[len(s)-1]}, true
}

func (s spread) String() string {
	if s.lo == s.hi {
		return fmt.Sprintf("%.2f", s.median)
	}
	return fmt.Sprintf("%.2f [%.2f–%.2f]", s.median, s.lo, s.hi)
}

// ratios pairs each round's row of server with the reference's row of the
// same round and returns f(server)/f(reference) per round.
func ratios(rows []row, server string, members int, name string, f func(row) float64) []float64 {
	var out []float64
	for _, r := range rows {
		if r.Server != server || r.Members != members || r.Case != name {
			continue
		}
		ref, ok := findRow(rows, reference, members, r.Round, name)
		if ok && f(ref) > 0 {
			out = append(out, f(r)/f(ref))
		}
	}
	return out
}

func writeRatios(b *strings.Builder, res *result, members int) {
	metrics := []struct {
		name string
		f    func(row) float64
	}{
		{"ops/s", func(r row) float64 { return r.PerSec }},
		{"ops/CPU-s", row.OpsPerCPU},
		{"p99", func(r row) float64 { return r.P99 }},
	}
	var others []string
	for _, s := range res.Servers {
		if s != reference {
			others = append(others, s)
		}
	}
	fmt.Fprintf(b, "| case |")
	for _, s := range others {
		for _, m := range metrics {
			fmt.Fprintf(b, " %s %s |", s, m.name)
		}
	}
	fmt.Fprintf(b, " load | other cores |\n|---|%s--:|--:|\n", strings.Repeat("--:|", len(metrics)*len(others)))
	for _, name := range caseOrder(res.Rows) {
		fmt.Fprintf(b, "| %s |", name)
		for _, s := range others {
			for _, m := range metrics {
				sp, ok := spreadOf(ratios(res.Rows, s, members, name, m.f))
				if !ok {
					fmt.Fprintf(b, " |")
					continue
				}
				fmt.Fprintf(b, " %s |", sp)
			}
		}
		load, _ := spreadOf(column(res.Rows, members, name, func(r row) float64 { return r.Load1 }))
		other, _ := spreadOf(column(res.Rows, members, name, func(r row) float64 { return r.OtherCores }))
		fmt.Fprintf(b, " %s | %s |\n", load, other)
	}
}

// column collects f over every server's rows of one case.
func column(rows []row, members int, name string, f func(row) float64) []float64 {
	var out []float64
	for _, r := range rows {
		if r.Members == members && r.Case == name {
			out = append(out, f(r))
		}
	}
	return out
}

func writeRounds(b *strings.Builder, rows []row, members int) {
	fmt.Fprintf(b, "| case | server | round | ops/s | ops/CPU-s | server CPU s | p50 | p90 | p99 | p99.9 | failed | load | other cores |\n")
	fmt.Fprintf(b, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, name := range caseOrder(rows) {
		for _, r := range rows {
			if r.Members != members || r.Case != name {
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %d | %.0f | %.0f | %.2f | %s | %s | %s | %s | %d | %.1f | %.2f |\n",
				name, r.Server, r.Round, r.PerSec, r.OpsPerCPU(), r.ServerCPU,
				ms(r.P50), ms(r.P90), ms(r.P99), ms(r.P999), r.Failed, r.Load1, r.OtherCores)
		}
	}
}

func writeMemory(b *strings.Builder, res *result) {
	fmt.Fprintf(b, "\n## Server peak RSS (VmHWM, over the whole suite)\n\n| server | members | round | per member (MiB) |\n|---|--:|--:|---|\n")
	for _, m := range res.Memory {
		var mib []string
		for _, bytes := range m.PerMember {
			mib = append(mib, fmt.Sprintf("%.1f", float64(bytes)/(1<<20)))
		}
		fmt.Fprintf(b, "| %s | %d | %d | %s |\n", m.Server, m.Members, m.Round, strings.Join(mib, ", "))
	}
	if !slices.Contains(res.Servers, reference) {
		return
	}
	fmt.Fprintf(b, "\nLargest member's peak RSS, ratio to %s (median of the rounds [range]):\n\n", reference)
	for _, s := range res.Servers {
		if s == reference {
			continue
		}
		for _, members := range []int{1, 3} {
			var rs []float64
			for _, m := range res.Memory {
				if m.Server != s || m.Members != members {
					continue
				}
				if ref, ok := findMemory(res.Memory, reference, members, m.Round); ok && slices.Max(ref.PerMember) > 0 {
					rs = append(rs, float64(slices.Max(m.PerMember))/float64(slices.Max(ref.PerMember)))
				}
			}
			if sp, ok := spreadOf(rs); ok {
				fmt.Fprintf(b, "- %s, %d member%s: %s\n", s, members, plural(members), sp)
			}
		}
	}
}

func findMemory(mem []memoryRow, server string, members, round int) (memoryRow, bool) {
	for _, m := range mem {
		if m.Server == server && m.Members == members && m.Round == round && len(m.PerMember) > 0 {
			return m, true
		}
	}
	return memoryRow{}, false
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

func findRow(rows []row, server string, members, round int, name string) (row, bool) {
	for _, r := range rows {
		if r.Server == server && r.Members == members && r.Round == round && r.Case == name {
			return r, true
		}
	}
	return row{}, false
}

func ms(secs float64) string { return fmt.Sprintf("%.2f", secs*1000) }
