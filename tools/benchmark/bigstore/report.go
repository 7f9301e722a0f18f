package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cairnkv/cairn/tools/benchmark/stats"
)

// writeReport writes report.json (the whole result) and report.md (the
// side-by-side tables) to dir.
func writeReport(dir string, res *result) error {
	return stats.WriteReportFiles(dir, res, markdown(res))
}

// unit says how a figure is printed.
type unit int

const (
	opsPerSec unit = iota
	millis         // stored in seconds
	seconds
	megabytes // stored in bytes; 1 MB = 10^6 bytes
	count
)

func (u unit) format(v float64) string {
	switch u {
	case opsPerSec:
		return fmt.Sprintf("%.0f", v)
	case millis:
		return fmt.Sprintf("%.2f", v*1000)
	case seconds:
		return fmt.Sprintf("%.2f", v)
	case megabytes:
		return fmt.Sprintf("%.1f", v/1e6)
	default:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
}

func (u unit) suffix() string {
	return [...]string{"ops/s", "ms", "s", "MB", ""}[u]
}

// figure is one row of a comparison table: how to read it from a
// server's result (false when that server has no such figure).
type figure struct {
	label string
	unit  unit
	get   func(*serverResult) (float64, bool)
}

type table struct {
	title   string
	figures []figure
}

// comparisonTables lists the tables of the report. The figures depend
// only on the configuration, so every run's report has the same rows.
func comparisonTables(cfg configJSON) []table {
	var load, after []figure
	for v := 1; v <= cfg.Versions; v++ {
		load = append(load, loadFigures(v)...)
		after = append(after, sizeFigures(fmt.Sprintf("v%d ", v), func(r *serverResult) (sizes, bool) {
			if v > len(r.Versions) {
				return sizes{}, false
			}
			return r.Versions[v-1].Sizes, true
		})...)
	}
	tables := []table{
		{"Load", load},
		{"After each version", after},
		{fmt.Sprintf("Restart (median of %d)", cfg.Restarts), restartFigures()},
		{"Compaction of every old revision", maintenanceFigures(func(r *serverResult) *maintenanceResult { return r.Compaction })},
	}
	if !cfg.SkipDefrag {
		tables = append(tables, table{"Defragmentation", maintenanceFigures(func(r *serverResult) *maintenanceResult { return r.Defrag })})
	}
	return tables
}

func loadFigures(v int) []figure {
	get := func(f func(loadResult) float64) func(*serverResult) (float64, bool) {
		return func(r *serverResult) (float64, bool) {
			if v > len(r.Versions) {
				return 0, false
			}
			return f(r.Versions[v-1].Load), true
		}
	}
	p := fmt.Sprintf("v%d load ", v)
	return []figure{
		{p + "throughput", opsPerSec, get(func(l loadResult) float64 { return l.OpsPerSec })},
		{p + "p50", millis, get(func(l loadResult) float64 { return l.P50 })},
		{p + "p99", millis, get(func(l loadResult) float64 { return l.P99 })},
		{p + "failed", count, get(func(l loadResult) float64 { return float64(l.Failed) })},
	}
}

func sizeFigures(prefix string, at func(*serverResult) (sizes, bool)) []figure {
	get := func(f func(sizes) int64) func(*serverResult) (float64, bool) {
		return func(r *serverResult) (float64, bool) {
			s, ok := at(r)
			return float64(f(s)), ok
		}
	}
	return []figure{
		{prefix + "VmHWM", megabytes, get(func(s sizes) int64 { return s.PeakRSS })},
		{prefix + "VmRSS", megabytes, get(func(s sizes) int64 { return s.RSS })},
		{prefix + "db file", megabytes, get(func(s sizes) int64 { return s.DBFile })},
		{prefix + "dbSize", megabytes, get(func(s sizes) int64 { return s.DBSize })},
		{prefix + "dbSizeInUse", megabytes, get(func(s sizes) int64 { return s.DBSizeInUse })},
		{prefix + "WAL", megabytes, get(func(s sizes) int64 { return s.WAL })},
		{prefix + "data dir", megabytes, get(func(s sizes) int64 { return s.DataDir })},
	}
}

func restartFigures() []figure {
	med := func(f func(restartSample) float64) func(*serverResult) (float64, bool) {
		return func(r *serverResult) (float64, bool) {
			vals := make([]float64, len(r.Restarts))
			for i, s := range r.Restarts {
				vals[i] = f(s)
			}
			return median(vals)
		}
	}
	return []figure{
		{"SIGTERM to exit", seconds, med(func(s restartSample) float64 { return s.StopSeconds })},
		{"exec to \"ready to serve client requests\"", seconds, med(func(s restartSample) float64 { return s.ReadySeconds })},
		{"exec to first linearizable Get", seconds, med(func(s restartSample) float64 { return s.FirstGetSeconds })},
		{"VmRSS at the first Get", megabytes, med(func(s restartSample) float64 { return float64(s.RSSAtGet) })},
		{"VmHWM at the first Get", megabytes, med(func(s restartSample) float64 { return float64(s.PeakRSSAtGet) })},
	}
}

func maintenanceFigures(of func(*serverResult) *maintenanceResult) []figure {
	get := func(f func(*maintenanceResult) float64) func(*serverResult) (float64, bool) {
		return func(r *serverResult) (float64, bool) {
			m := of(r)
			if m == nil {
				return 0, false
			}
			return f(m), true
		}
	}
	figs := []figure{{"took", seconds, get(func(m *maintenanceResult) float64 { return m.TookSeconds })}}
	for i, name := range windowNames {
		w := func(f func(probeWindow) float64) func(*maintenanceResult) float64 {
			return func(m *maintenanceResult) float64 {
				if i >= len(m.Windows) {
					return 0
				}
				return f(m.Windows[i])
			}
		}
		p := "probe " + name + " "
		figs = append(figs,
			figure{p + "p50", millis, get(w(func(w probeWindow) float64 { return w.P50 }))},
			figure{p + "p99", millis, get(w(func(w probeWindow) float64 { return w.P99 }))},
			figure{p + "max", millis, get(w(func(w probeWindow) float64 { return w.Max }))},
			figure{p + "puts", count, get(w(func(w probeWindow) float64 { return float64(w.Succeeded) }))},
			figure{p + "errors", count, get(w(func(w probeWindow) float64 { return float64(w.Failed) }))},
			figure{p + "send delay max", millis, get(w(func(w probeWindow) float64 { return w.MaxSendDelay }))},
			figure{p + "WAL fsyncs over 32 ms", count, walFigure(of, i, func(w walWindow) float64 { return float64(w.Stalls) })},
			figure{p + "slowest WAL fsync up to", millis, walFigure(of, i, func(w walWindow) float64 { return w.SlowestBound })},
		)
	}
	return append(figs, sizeFigures("after: ", func(r *serverResult) (sizes, bool) {
		m := of(r)
		if m == nil {
			return sizes{}, false
		}
		return m.After, true
	})[2:5]...) // db file, dbSize, dbSizeInUse
}

// walFigure reads a WAL fsync figure of window i; false where the
// server's metrics could not be read.
func walFigure(of func(*serverResult) *maintenanceResult, i int, f func(walWindow) float64) func(*serverResult) (float64, bool) {
	return func(r *serverResult) (float64, bool) {
		m := of(r)
		if m == nil || i >= len(m.Windows) || m.Windows[i].WAL == nil {
			return 0, false
		}
		return f(*m.Windows[i].WAL), true
	}
}

// median is the middle value (the mean of the two middle ones for an
// even count); false for no values.
func median(vals []float64) (float64, bool) {
	if len(vals) == 0 {
		return 0, false
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2], true
	}
	return (s[n/2-1] + s[n/2]) / 2, true
}

// ratio is a/b printed for the table, or "" when it means nothing.
func ratio(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return ""
	}
	return fmt.Sprintf("%.2f", a/b)
}

func markdown(res *result) string {
	var b strings.Builder
	cfg := res.Config
	fmt.Fprintf(&b, "# cairn big-store benchmark\n\n")
	fmt.Fprintf(&b, "Started %s, took %.0f s; %s. One server runs at a time; servers take turns phase by phase.\n\n",
		res.Started.Format("2006-01-02 15:04 MST"), res.Duration, res.Machine)
	fmt.Fprintf(&b, "Workload: %s sequential keys of %d B with %d B values, written %d times, %d clients over %d connections, "+
		"--quota-backend-bytes=%d. Probe: one put every %s in its own goroutine over %d keys, windows of %s. "+
		"MB = 10^6 bytes; sizes are apparent file sizes; latencies of successful requests only.\n",
		thousands(cfg.Keys), cfg.KeyBytes, cfg.ValueBytes, cfg.Versions, cfg.Clients, cfg.Conns,
		cfg.QuotaBackendBytes, seconds.format(cfg.ProbeInterval*1000)+" ms", cfg.ProbeKeys, seconds.format(cfg.ProbeWindow)+" s")
	fmt.Fprintf(&b, "\n%s\n", noiseSummary(res.Phases))
	for _, t := range comparisonTables(cfg) {
		fmt.Fprintf(&b, "\n## %s\n\n", t.title)
		writeComparison(&b, res, t.figures)
	}
	writeRestartSamples(&b, res)
	writePhases(&b, res)
	return b.String()
}

// writeComparison prints one table: a column per server and, with two
// servers, their ratio.
func writeComparison(b *strings.Builder, res *result, figures []figure) {
	fmt.Fprintf(b, "| figure |")
	for _, s := range res.Servers {
		fmt.Fprintf(b, " %s |", s)
	}
	twoWay := len(res.Servers) == 2
	if twoWay {
		fmt.Fprintf(b, " %s/%s |", res.Servers[0], res.Servers[1])
	}
	fmt.Fprintf(b, "\n|---|%s\n", strings.Repeat("--:|", len(res.Servers)+boolInt(twoWay)))
	for _, f := range figures {
		label := f.label
		if sfx := f.unit.suffix(); sfx != "" {
			label += " (" + sfx + ")"
		}
		fmt.Fprintf(b, "| %s |", label)
		vals := make([]float64, len(res.Servers))
		for i, s := range res.Servers {
			v, ok := f.get(res.Runs[s])
			vals[i] = math.NaN()
			if !ok {
				cell(b, "")
				continue
			}
			vals[i] = v
			cell(b, f.unit.format(v))
		}
		if twoWay {
			cell(b, ratio(vals[0], vals[1]))
		}
		fmt.Fprintln(b)
	}
}

// cell prints one table cell; an empty one as " |".
func cell(b *strings.Builder, s string) {
	if s == "" {
		b.WriteString(" |")
		return
	}
	fmt.Fprintf(b, " %s |", s)
}

func writeRestartSamples(b *strings.Builder, res *result) {
	fmt.Fprintf(b, "\n## Every restart\n\n| server | # | SIGTERM to exit (s) | exec to ready (s) | exec to first Get (s) | VmRSS at Get (MB) |\n|---|--:|--:|--:|--:|--:|\n")
	for _, s := range res.Servers {
		for i, r := range res.Runs[s].Restarts {
			fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s |\n", s, i+1, seconds.format(r.StopSeconds),
				seconds.format(r.ReadySeconds), seconds.format(r.FirstGetSeconds), megabytes.format(float64(r.RSSAtGet)))
		}
	}
}

func writePhases(b *strings.Builder, res *result) {
	fmt.Fprintf(b, "\n## Machine load per phase\n\n")
	fmt.Fprintf(b, "Own CPU: the server, the load generator and this tool; other CPU: every other process on the machine (cores, from /proc/stat).\n\n")
	fmt.Fprintf(b, "| server | phase | took (s) | load avg (1 min) start → end | own CPU (cores) | other CPU (cores) |\n|---|---|--:|--:|--:|--:|\n")
	for _, p := range res.Phases {
		fmt.Fprintf(b, "| %s | %s | %.1f | %.2f → %.2f | %.2f | %.2f |\n", p.Server, p.Phase, p.Seconds, p.Load1Start, p.Load1End, p.OwnCores, p.OtherCores)
	}
}

// noiseSummary says in one sentence how busy the machine was, so a reader
// sees a noisy run before reading its figures.
func noiseSummary(phases []phaseFigures) string {
	var other, load []float64
	for _, p := range phases {
		if p.Seconds >= 1 { // a stop of a few milliseconds says nothing
			other = append(other, p.OtherCores)
			load = append(load, p.Load1Start, p.Load1End)
		}
	}
	if len(other) == 0 {
		return "Machine load: not measured."
	}
	med, _ := median(other)
	return fmt.Sprintf("Machine load: other processes used %.2f cores in the median phase (%.2f to %.2f); "+
		"1-minute load average %.2f to %.2f (see the last table).",
		med, slices.Min(other), slices.Max(other), slices.Min(load), slices.Max(load))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func itoa(n int) string { return strconv.Itoa(n) }

// thousands prints n with comma separators.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
