package stats

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// ReportOptions chooses which percentiles and how many histogram buckets a
// Report computes; zero values mean the defaults.
type ReportOptions struct {
	Percentiles []float64
	Buckets     int
	// Unit names what was counted, capitalised and plural ("Requests" by
	// default; "Events" for watch deliveries). NotDone names the planned
	// items that neither succeeded nor failed ("not sent" by default;
	// "missing" for events that never arrived).
	Unit    string
	NotDone string
}

func (o ReportOptions) unit() string {
	if o.Unit == "" {
		return "Requests"
	}
	return o.Unit
}

func (o ReportOptions) notDone() string {
	if o.NotDone == "" {
		return "not sent"
	}
	return o.NotDone
}

func (o ReportOptions) percentiles() []float64 {
	if len(o.Percentiles) == 0 {
		return DefaultPercentiles
	}
	return o.Percentiles
}

func (o ReportOptions) buckets() int {
	if o.Buckets <= 0 {
		return DefaultBuckets
	}
	return o.Buckets
}

// Report is the result of a run. Latency figures cover successful requests
// only; failures are counted in Failed and itemised in Errors.
type Report struct {
	Planned   int64 // requests the run meant to send
	Succeeded int64
	Failed    int64
	NotSent   int64 // planned but never sent, e.g. after an interrupt

	Elapsed        time.Duration // wall clock of the whole run
	RequestsPerSec float64       // Succeeded / Elapsed

	Fastest, Slowest, Average, Stddev time.Duration

	Percentiles []Percentile
	Histogram   []Bucket
	Errors      []ErrorCount

	// SampleSize is how many latencies fed Percentiles and Histogram;
	// Sampled is true when that is fewer than Succeeded.
	SampleSize int
	Sampled    bool

	// Unit and NotDone label the text report's count lines (see
	// ReportOptions). The JSON keys do not change with them.
	Unit    string
	NotDone string

	// ServerMemory is the servers' peak memory, when the run was asked to
	// watch server processes on this machine.
	ServerMemory []ServerMemory
}

// ServerMemory is the peak resident set size of one server process, as
// the kernel records it (VmHWM in /proc/PID/status): the largest RSS the
// process ever had, so a short spike between two samples is not missed.
type ServerMemory struct {
	PID          int    `json:"pid"`
	Name         string `json:"name"`
	PeakRSSBytes int64  `json:"peak_rss_bytes"`
}

// WriteServerMemory prints the "Server memory" section; it prints nothing
// for an empty list. Commands with several reports call it once.
func WriteServerMemory(w io.Writer, mem []ServerMemory) error {
	if len(mem) == 0 {
		return nil
	}
	p := &textPrinter{w: w}
	p.printf("\nServer memory (peak RSS, VmHWM):\n")
	for _, m := range mem {
		p.printf("  pid %d (%s):\t%.1f MiB\n", m.PID, m.Name, float64(m.PeakRSSBytes)/(1<<20))
	}
	return p.err
}

// histogramBarWidth is the bar length of the fullest histogram bucket.
const histogramBarWidth = 40

// WriteText prints the report in the layout of etcd's benchmark tool, with
// durations in seconds. precise prints nanosecond precision; otherwise
// microseconds, which is enough to tell fast servers apart.
func (r *Report) WriteText(w io.Writer, precise bool) error {
	p := &textPrinter{w: w, precise: precise}
	r.writeSummary(p)
	r.writeHistogram(p)
	r.writePercentiles(p)
	r.writeErrors(p)
	if p.err != nil {
		return p.err
	}
	return WriteServerMemory(w, r.ServerMemory)
}

func (r *Report) writeSummary(p *textPrinter) {
	p.printf("\nSummary:\n")
	p.printf("  Total:\t%s secs.\n", p.secs(r.Elapsed))
	if r.Succeeded > 0 {
		p.printf("  Slowest:\t%s secs.\n", p.secs(r.Slowest))
		p.printf("  Fastest:\t%s secs.\n", p.secs(r.Fastest))
		p.printf("  Average:\t%s secs.\n", p.secs(r.Average))
		p.printf("  Stddev:\t%s secs.\n", p.secs(r.Stddev))
	}
	unit, notDone := r.Unit, r.NotDone
	if unit == "" {
		unit = "Requests"
	}
	if notDone == "" {
		notDone = "not sent"
	}
	p.printf("  %s/sec:\t%.4f\n", unit, r.RequestsPerSec)
	p.printf("  %s:\t%d planned, %d succeeded, %d failed, %d %s\n",
		unit, r.Planned, r.Succeeded, r.Failed, r.NotSent, notDone)
	if r.Sampled {
		p.printf("  Note:\tpercentiles and histogram use a uniform sample of %d of %d latencies (use --precise for all)\n",
			r.SampleSize, r.Succeeded)
	}
}

func (r *Report) writeHistogram(p *textPrinter) {
	if len(r.Histogram) == 0 {
		return
	}
	var most int64
	for _, b := range r.Histogram {
		most = max(most, b.Count)
	}
	p.printf("\nResponse time histogram:\n")
	for _, b := range r.Histogram {
		bar := int(b.Count * histogramBarWidth / most)
		p.printf("  %s [%d]\t|%s\n", p.secs(b.Upper), b.Count, strings.Repeat("∎", bar))
	}
}

func (r *Report) writePercentiles(p *textPrinter) {
	if len(r.Percentiles) == 0 {
		return
	}
	p.printf("\nLatency distribution:\n")
	for _, pc := range r.Percentiles {
		p.printf("  %g%% in %s secs.\n", pc.P, p.secs(pc.Latency))
	}
}

func (r *Report) writeErrors(p *textPrinter) {
	if len(r.Errors) == 0 {
		return
	}
	p.printf("\nError distribution:\n")
	for _, e := range r.Errors {
		p.printf("  [%d]\t%s\n", e.Count, e.Message)
	}
}

// textPrinter remembers the first write error so the layout code above can
// stay free of error plumbing.
type textPrinter struct {
	w       io.Writer
	precise bool
	err     error
}

func (p *textPrinter) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *textPrinter) secs(d time.Duration) string {
	if p.precise {
		return fmt.Sprintf("%.9f", d.Seconds())
	}
	return fmt.Sprintf("%.6f", d.Seconds())
}

// jsonReport is the machine-readable form of a Report: durations are float
// seconds so that any tool can read them without knowing Go's units.
type jsonReport struct {
	Planned        int64            `json:"planned"`
	Succeeded      int64            `json:"succeeded"`
	Failed         int64            `json:"failed"`
	NotSent        int64            `json:"not_sent"`
	TotalSeconds   float64          `json:"total_seconds"`
	RequestsPerSec float64          `json:"requests_per_sec"`
	Fastest        float64          `json:"fastest_seconds"`
	Slowest        float64          `json:"slowest_seconds"`
	Average        float64          `json:"average_seconds"`
	Stddev         float64          `json:"stddev_seconds"`
	Percentiles    []jsonPercentile `json:"percentiles"`
	Histogram      []jsonBucket     `json:"histogram"`
	Errors         []jsonError      `json:"errors"`
	SampleSize     int              `json:"sample_size"`
	Sampled        bool             `json:"sampled"`
	ServerMemory   []ServerMemory   `json:"server_memory,omitempty"`
}

type jsonPercentile struct {
	P       float64 `json:"p"`
	Seconds float64 `json:"seconds"`
}

type jsonBucket struct {
	UpperSeconds float64 `json:"upper_seconds"`
	Count        int64   `json:"count"`
}

type jsonError struct {
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// MarshalJSON encodes the report in the same form as WriteJSON, so that a
// command with several reports can nest them in one JSON document.
func (r *Report) MarshalJSON() ([]byte, error) {
	return json.Marshal(r.toJSON())
}

// WriteJSON writes the report as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.toJSON())
}

func (r *Report) toJSON() *jsonReport {
	out := &jsonReport{
		Planned:        r.Planned,
		Succeeded:      r.Succeeded,
		Failed:         r.Failed,
		NotSent:        r.NotSent,
		TotalSeconds:   r.Elapsed.Seconds(),
		RequestsPerSec: r.RequestsPerSec,
		Fastest:        r.Fastest.Seconds(),
		Slowest:        r.Slowest.Seconds(),
		Average:        r.Average.Seconds(),
		Stddev:         r.Stddev.Seconds(),
		Percentiles:    make([]jsonPercentile, 0, len(r.Percentiles)),
		Histogram:      make([]jsonBucket, 0, len(r.Histogram)),
		Errors:         make([]jsonError, 0, len(r.Errors)),
		SampleSize:     r.SampleSize,
		Sampled:        r.Sampled,
		ServerMemory:   r.ServerMemory,
	}
	for _, p := range r.Percentiles {
		out.Percentiles = append(out.Percentiles, jsonPercentile{P: p.P, Seconds: p.Latency.Seconds()})
	}
	for _, b := range r.Histogram {
		out.Histogram = append(out.Histogram, jsonBucket{UpperSeconds: b.Upper.Seconds(), Count: b.Count})
	}
	for _, e := range r.Errors {
		out.Errors = append(out.Errors, jsonError{Message: e.Message, Count: e.Count})
	}
	return out
}
