package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A probe window's p99 can be set by the disk alone: one WAL fsync that
// stalls 80 ms delays every put behind it (about 40 at one put every 2 ms),
// more than the 1% a 10-second window's p99 looks at. On a shared virtual
// disk such stalls come and go with the neighbours, so each window also
// says how many WAL fsyncs the server itself saw take longer than
// walStallThreshold, read from the histogram both cairn and etcd export.
// A window with stalls is the disk's figure as much as the server's.

// walFsyncMetric is etcd's WAL fsync histogram, which cairn exports too.
const walFsyncMetric = "etcd_disk_wal_fsync_duration_seconds_bucket"

// walStallThreshold is the bucket bound above which an fsync counts as a
// stall (a bound of the histogram: 1 ms doubling to 8.192 s).
const walStallThreshold = 0.032

// walFsyncs is the histogram at one moment: cumulative counts by upper
// bound (seconds, ascending, +Inf last).
type walFsyncs struct {
	bounds []float64
	counts []float64
}

// parseWALFsyncs reads the histogram from Prometheus' text format.
func parseWALFsyncs(r io.Reader) (walFsyncs, error) {
	var h walFsyncs
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, walFsyncMetric+"{") {
			continue
		}
		bound, count, err := parseBucket(line)
		if err != nil {
			return walFsyncs{}, err
		}
		h.bounds = append(h.bounds, bound)
		h.counts = append(h.counts, count)
	}
	if err := sc.Err(); err != nil {
		return walFsyncs{}, err
	}
	if len(h.bounds) == 0 {
		return walFsyncs{}, fmt.Errorf("no %s in the metrics", walFsyncMetric)
	}
	return h, nil
}

// parseBucket reads `name{le="0.004"} 12` (other labels allowed).
func parseBucket(line string) (bound, count float64, err error) {
	_, rest, _ := strings.Cut(line, `le="`)
	le, rest, ok := strings.Cut(rest, `"`)
	_, value, ok2 := strings.Cut(rest, "} ")
	if !ok || !ok2 {
		return 0, 0, fmt.Errorf("malformed histogram line %q", line)
	}
	if bound, err = strconv.ParseFloat(le, 64); err != nil { // ParseFloat reads "+Inf"
		return 0, 0, fmt.Errorf("bucket bound in %q: %w", line, err)
	}
	if count, err = strconv.ParseFloat(strings.Fields(value)[0], 64); err != nil {
		return 0, 0, fmt.Errorf("bucket count in %q: %w", line, err)
	}
	return bound, count, nil
}

// stallsSince compares h with an earlier reading: how many fsyncs in
// between took longer than walStallThreshold, and the upper bound of the
// slowest one's bucket (0 if there were none; +Inf is reported as the
// largest finite bound). ok is false if the readings do not match (a
// missing one, or a restart in between).
func (h walFsyncs) stallsSince(earlier walFsyncs) (stalls int64, slowestBound float64, ok bool) {
	if len(h.bounds) == 0 || len(h.bounds) != len(earlier.bounds) {
		return 0, 0, false
	}
	prevCum := 0.0
	for i, bound := range h.bounds {
		cum := h.counts[i] - earlier.counts[i]
		if cum < prevCum || cum < 0 {
			return 0, 0, false
		}
		if cum > prevCum {
			slowestBound = bound
			if math.IsInf(bound, 1) && i > 0 {
				slowestBound = h.bounds[i-1]
			}
		}
		if i > 0 && h.bounds[i-1] >= walStallThreshold {
			stalls += int64(cum - prevCum)
		}
		prevCum = cum
	}
	return stalls, slowestBound, true
}

// walReader fetches the histogram from a member's /metrics.
type walReader struct {
	client *http.Client
	url    string
}

func newWALReader(clientURL string) *walReader {
	return &walReader{client: &http.Client{Timeout: 10 * time.Second}, url: strings.TrimRight(clientURL, "/") + "/metrics"}
}

// read returns the histogram now; a failed read gives an empty one, whose
// windows then report no stall figure (the probe's figures stand alone).
func (w *walReader) read(ctx context.Context) walFsyncs {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.url, nil)
	if err != nil {
		return walFsyncs{}
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return walFsyncs{}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return walFsyncs{}
	}
	h, err := parseWALFsyncs(resp.Body)
	if err != nil {
		return walFsyncs{}
	}
	return h
}
