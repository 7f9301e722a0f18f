package stats

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// msRange returns the latencies from..to milliseconds, ascending.
func msRange(from, to int) []time.Duration {
	var out []time.Duration
	for i := from; i <= to; i++ {
		out = append(out, time.Duration(i)*time.Millisecond)
	}
	return out
}

func TestPercentiles(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		sorted []time.Duration
		ps     []float64
		want   []time.Duration
	}{
		{"one sample answers every percentile", msRange(7, 7), []float64{10, 50, 99.9}, []time.Duration{7 * ms, 7 * ms, 7 * ms}},
		{"four samples", []time.Duration{10 * ms, 20 * ms, 30 * ms, 40 * ms}, []float64{10, 25, 50, 75, 100}, []time.Duration{10 * ms, 10 * ms, 20 * ms, 30 * ms, 40 * ms}},
		{"ten samples round rank up", msRange(1, 10), []float64{25, 95, 99.9}, []time.Duration{3 * ms, 10 * ms, 10 * ms}},
		{"hundred samples", msRange(1, 100), DefaultPercentiles, []time.Duration{10 * ms, 25 * ms, 50 * ms, 75 * ms, 90 * ms, 95 * ms, 99 * ms, 100 * ms}},
		{"thousand samples p99.9 is not pushed past by float noise", msRange(1, 1000), []float64{99, 99.9}, []time.Duration{990 * ms, 999 * ms}},
		{"zero percentile is the fastest", msRange(5, 9), []float64{0}, []time.Duration{5 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Percentiles(tt.sorted, tt.ps)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d percentiles, want %d", len(got), len(tt.want))
			}
			for i, p := range got {
				if p.P != tt.ps[i] || p.Latency != tt.want[i] {
					t.Errorf("p%g = %v, want %v", tt.ps[i], p.Latency, tt.want[i])
				}
			}
		})
	}
	if got := Percentiles(nil, DefaultPercentiles); got != nil {
		t.Errorf("no samples: got %v, want nil", got)
	}
}

func TestHistogram(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		sorted  []time.Duration
		buckets int
		want    []Bucket
	}{
		{"empty", nil, 10, nil},
		{"all equal collapse to one bucket", []time.Duration{ms, ms, ms}, 10, []Bucket{{ms, 3}}},
		{"three even buckets", msRange(1, 10), 3, []Bucket{{4 * ms, 4}, {7 * ms, 3}, {10 * ms, 3}}},
		{"edge value falls in the lower bucket", []time.Duration{0, 5 * ms, 10 * ms}, 2, []Bucket{{5 * ms, 2}, {10 * ms, 1}}},
		{"empty middle buckets are kept", []time.Duration{0, 0, 100 * ms}, 4, []Bucket{{25 * ms, 2}, {50 * ms, 0}, {75 * ms, 0}, {100 * ms, 1}}},
		{"uneven width still ends at slowest", []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 3, []Bucket{{4, 4}, {7, 3}, {10, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Histogram(tt.sorted, tt.buckets)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			var total int64
			for i := range got {
				total += got[i].Count
				if got[i] != tt.want[i] {
					t.Errorf("bucket %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
			if total != int64(len(tt.sorted)) {
				t.Errorf("buckets hold %d samples, want %d", total, len(tt.sorted))
			}
		})
	}
}

// knownRecorder holds four successes of 1..4 ms and three failures.
func knownRecorder() *Recorder {
	r := NewRecorder(Unlimited)
	for _, lat := range msRange(1, 4) {
		r.Record(lat, nil)
	}
	r.Record(time.Hour, errors.New("a")) // failure latencies must not count
	r.Record(time.Nanosecond, errors.New("b"))
	r.Record(time.Nanosecond, errors.New("a"))
	return r
}

func TestRecorderSummary(t *testing.T) {
	rep := knownRecorder().Report(10, 2*time.Second, ReportOptions{})
	ms := time.Millisecond
	checks := []struct {
		name      string
		got, want any
	}{
		{"succeeded", rep.Succeeded, int64(4)},
		{"failed", rep.Failed, int64(3)},
		{"not sent", rep.NotSent, int64(3)},
		{"fastest", rep.Fastest, ms},
		{"slowest", rep.Slowest, 4 * ms},
		{"average", rep.Average, 2500 * time.Microsecond},
		// population stddev of 1,2,3,4 ms is sqrt(1.25) ms
		{"stddev", rep.Stddev, time.Duration(math.Round(math.Sqrt(1.25) * 1e6))},
		{"requests/sec", rep.RequestsPerSec, 2.0},
		{"errors most frequent first", rep.Errors, []ErrorCount{{"a", 2}, {"b", 1}}},
		{"sample size", rep.SampleSize, 4},
		{"sampled", rep.Sampled, false},
		{"median", rep.Percentiles[2], Percentile{50, 2 * ms}},
	}
	for _, c := range checks {
		if !equalish(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func equalish(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func TestRecorderEmpty(t *testing.T) {
	rep := NewRecorder(Unlimited).Report(5, 0, ReportOptions{})
	if rep.NotSent != 5 || rep.RequestsPerSec != 0 || rep.Percentiles != nil || rep.Histogram != nil {
		t.Errorf("empty report = %+v", rep)
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "Slowest") {
		t.Errorf("empty report should not print latencies:\n%s", buf.String())
	}
}

func TestRecorderSampling(t *testing.T) {
	const n, limit = 10000, 100
	r := NewRecorder(limit)
	for i := 1; i <= n; i++ {
		r.Record(time.Duration(i)*time.Microsecond, nil)
	}
	rep := r.Report(n, time.Second, ReportOptions{})
	if rep.SampleSize != limit || !rep.Sampled {
		t.Fatalf("sample size %d sampled %v, want %d true", rep.SampleSize, rep.Sampled, limit)
	}
	// Exact statistics must not depend on the sample.
	if rep.Succeeded != n || rep.Fastest != time.Microsecond || rep.Slowest != n*time.Microsecond {
		t.Errorf("exact stats wrong: %+v", rep)
	}
	if want := 5000500 * time.Nanosecond; rep.Average != want {
		t.Errorf("average %v, want %v", rep.Average, want)
	}
	// A reservoir that only kept the first samples would put the median near 50µs.
	if med := rep.Percentiles[2].Latency; med < 2*time.Millisecond || med > 8*time.Millisecond {
		t.Errorf("sampled median %v is not representative of 1µs..10ms", med)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	const workers, each = 8, 1000
	r := NewRecorder(Unlimited)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				var err error
				if i%10 == 0 {
					err = errors.New("tenth")
				}
				r.Record(time.Duration(w*each+i+1), err)
			}
		})
	}
	wg.Wait()
	rep := r.Report(workers*each, time.Second, ReportOptions{})
	if rep.Succeeded != workers*each*9/10 || rep.Failed != workers*each/10 || rep.NotSent != 0 {
		t.Errorf("counts %d/%d/%d", rep.Succeeded, rep.Failed, rep.NotSent)
	}
}

func TestWriteText(t *testing.T) {
	rep := knownRecorder().Report(10, 2*time.Second, ReportOptions{Buckets: 3})
	tests := []struct {
		precise bool
		want    []string
	}{
		{false, []string{
			"Total:\t2.000000 secs.",
			"Slowest:\t0.004000 secs.",
			"Fastest:\t0.001000 secs.",
			"Average:\t0.002500 secs.",
			"Requests/sec:\t2.0000",
			"4 succeeded, 3 failed, 3 not sent",
			"0.002000 [2]\t|" + strings.Repeat("∎", histogramBarWidth),
			"0.004000 [1]\t|" + strings.Repeat("∎", histogramBarWidth/2),
			"50% in 0.002000 secs.",
			"99.9% in 0.004000 secs.",
			"[2]\ta\n  [1]\tb",
		}},
		{true, []string{"Average:\t0.002500000 secs.", "10% in 0.001000000 secs."}},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		if err := rep.WriteText(&buf, tt.precise); err != nil {
			t.Fatal(err)
		}
		for _, w := range tt.want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("precise=%v: output lacks %q:\n%s", tt.precise, w, buf.String())
			}
		}
	}
}

func TestWriteJSON(t *testing.T) {
	rep := knownRecorder().Report(10, 2*time.Second, ReportOptions{})
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got jsonReport
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Succeeded != 4 || got.Failed != 3 || got.NotSent != 3 || got.TotalSeconds != 2 ||
		got.Average != 0.0025 || len(got.Percentiles) != len(DefaultPercentiles) ||
		len(got.Errors) != 2 || got.Errors[0].Message != "a" {
		t.Errorf("json report = %+v", got)
	}
}

func TestRecordSuccessesMatchesRecord(t *testing.T) {
	lats := msRange(1, 50)
	one, batch := NewRecorder(Unlimited), NewRecorder(Unlimited)
	for _, l := range lats {
		one.Record(l, nil)
	}
	batch.RecordSuccesses(lats[:20])
	batch.RecordSuccesses(lats[20:])
	batch.RecordSuccesses(nil)
	a, b := one.Report(50, time.Second, ReportOptions{}), batch.Report(50, time.Second, ReportOptions{})
	if a.Succeeded != b.Succeeded || a.Average != b.Average || a.Stddev != b.Stddev || a.Fastest != b.Fastest || a.Slowest != b.Slowest {
		t.Errorf("batch report %+v, want %+v", b, a)
	}
	for i := range a.Percentiles {
		if a.Percentiles[i] != b.Percentiles[i] {
			t.Errorf("percentile %v: %v vs %v", a.Percentiles[i].P, b.Percentiles[i], a.Percentiles[i])
		}
	}
}

func TestReportUnitLabelsAndNestedJSON(t *testing.T) {
	r := NewRecorder(Unlimited)
	r.RecordSuccesses(msRange(1, 3))
	rep := r.Report(5, time.Second, ReportOptions{Unit: "Events", NotDone: "missing"})
	var text bytes.Buffer
	if err := rep.WriteText(&text, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Events/sec:\t3.0000", "Events:\t5 planned, 3 succeeded, 0 failed, 2 missing"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var direct bytes.Buffer
	if err := rep.WriteJSON(&direct); err != nil {
		t.Fatal(err)
	}
	nested, err := json.Marshal(map[string]*Report{"r": rep})
	if err != nil {
		t.Fatal(err)
	}
	var fromDirect any
	var fromNested map[string]any
	if err := json.Unmarshal(direct.Bytes(), &fromDirect); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(nested, &fromNested); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(fromDirect)
	b, _ := json.Marshal(fromNested["r"])
	if !bytes.Equal(a, b) {
		t.Errorf("nested JSON %s differs from WriteJSON %s", b, a)
	}
}
