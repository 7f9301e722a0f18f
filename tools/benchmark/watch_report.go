package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/cairnkv/cairn/tools/benchmark/stats"
)

// watchResult is the report of a watch-latency or watch run. Its JSON form
// (--report-json) nests the three latency reports and the delivery check.
type watchResult struct {
	Puts       *stats.Report  `json:"puts"`
	Events     *stats.Report  `json:"events"`
	SlowEvents *stats.Report  `json:"slow_events,omitempty"`
	Delivery   deliveryReport `json:"delivery"`

	ServerMemory  []stats.ServerMemory `json:"server_memory,omitempty"`
	WatcherMemory *watcherMemory       `json:"watcher_memory,omitempty"`
}

// deliveryReport checks that every watcher saw every successful put exactly
// once and in revision order.
type deliveryReport struct {
	Watchers        int                `json:"watchers"`
	SlowWatchers    int                `json:"slow_watchers"`
	PutsSucceeded   int64              `json:"puts_succeeded"`
	ExpectedEvents  int64              `json:"expected_events"` // watchers x succeeded puts
	ReceivedEvents  int64              `json:"received_events"` // distinct events of this run's puts
	MissingEvents   int64              `json:"missing_events"`  // succeeded puts a watcher never saw
	Duplicates      int64              `json:"duplicates"`
	OutOfOrder      int64              `json:"out_of_order"`
	Unexpected      int64              `json:"unexpected"`
	CanceledWatches int                `json:"canceled_watchers"`
	CompleteFast    int                `json:"complete_watchers"`
	CompleteSlow    int                `json:"complete_slow_watchers"`
	StreamErrors    []stats.ErrorCount `json:"stream_errors"`
}

// result assembles the reports once every receiver has finished.
// putStart is when the puts began, since r.base.
func (r *watchRun) result(succeeded int64, putStart time.Duration, putRec *stats.Recorder, putElapsed time.Duration) *watchResult {
	c := r.cfg
	d := deliveryReport{Watchers: c.watchers, SlowWatchers: c.slowWatchers, PutsSucceeded: succeeded}
	for _, w := range r.watchers {
		missing := int64(0)
		for seq := range c.putTotal {
			if r.putOK[seq].Load() && w.seen[seq/64]&(1<<(seq%64)) == 0 {
				missing++
			}
		}
		d.ExpectedEvents += succeeded
		d.ReceivedEvents += w.distinct
		d.MissingEvents += missing
		d.Duplicates += w.duplicates
		d.OutOfOrder += w.outOfOrder
		d.Unexpected += w.unexpected
		if w.canceled != "" {
			d.CanceledWatches++
		}
		complete := missing == 0 && w.duplicates == 0 && w.outOfOrder == 0 && w.unexpected == 0 && w.canceled == ""
		switch {
		case w.slow:
			if complete {
				d.CompleteSlow++
			}
		default:
			if complete {
				d.CompleteFast++
			}
		}
	}
	r.mu.Lock()
	for _, msg := range slices.Sorted(maps.Keys(r.streamErrs)) {
		d.StreamErrors = append(d.StreamErrors, stats.ErrorCount{Message: msg, Count: r.streamErrs[msg]})
	}
	lastFast, lastSlow := r.lastFastRecv, r.lastSlowRecv
	r.mu.Unlock()

	eventOpts := stats.ReportOptions{Unit: "Events", NotDone: "missing"}
	res := &watchResult{Puts: putRec.Report(c.putTotal, putElapsed, stats.ReportOptions{Unit: "Puts"}), Delivery: d}
	// An event report's Total runs from the first put until the last event
	// its watchers received, so Events/sec is the delivery rate.
	res.Events = r.fastRec.Report(succeeded*int64(c.watchers), max(lastFast-putStart, 0), eventOpts)
	if c.slowWatchers > 0 {
		res.SlowEvents = r.slowRec.Report(succeeded*int64(c.slowWatchers), max(lastSlow-putStart, 0), eventOpts)
	}
	return res
}

func (res *watchResult) writeText(w io.Writer, precise bool) error {
	sections := []struct {
		title string
		rep   *stats.Report
	}{
		{"Puts (latency: send to response)", res.Puts},
		{fmt.Sprintf("Put-to-event latency, %d watchers (one sample per watcher per event: put sent to event received)", res.Delivery.Watchers), res.Events},
	}
	if res.SlowEvents != nil {
		sections = append(sections, struct {
			title string
			rep   *stats.Report
		}{fmt.Sprintf("Put-to-event latency, %d slow watchers", res.Delivery.SlowWatchers), res.SlowEvents})
	}
	for _, s := range sections {
		if s.rep == nil {
			continue
		}
		if _, err := fmt.Fprintf(w, "\n=== %s ===\n", s.title); err != nil {
			return err
		}
		if err := s.rep.WriteText(w, precise); err != nil {
			return err
		}
	}
	if err := res.Delivery.writeText(w); err != nil {
		return err
	}
	if err := res.WatcherMemory.writeText(w); err != nil {
		return err
	}
	return stats.WriteServerMemory(w, res.ServerMemory)
}

func (d *deliveryReport) writeText(w io.Writer) error {
	p := &errWriter{w: w}
	p.printf("\n=== Delivery check ===\n")
	p.printf("  Watchers complete:\t%d of %d", d.CompleteFast, d.Watchers)
	if d.SlowWatchers > 0 {
		p.printf(", slow %d of %d", d.CompleteSlow, d.SlowWatchers)
	}
	p.printf(" (every succeeded put's event exactly once, in revision order)\n")
	p.printf("  Events:\t%d expected (%d watchers x %d succeeded puts), %d received, %d missing\n",
		d.ExpectedEvents, d.Watchers+d.SlowWatchers, d.PutsSucceeded, d.ReceivedEvents, d.MissingEvents)
	p.printf("  Anomalies:\t%d duplicates, %d out of order, %d unexpected, %d canceled watchers\n",
		d.Duplicates, d.OutOfOrder, d.Unexpected, d.CanceledWatches)
	for _, e := range d.StreamErrors {
		p.printf("  Stream error [%d]\t%s\n", e.Count, e.Message)
	}
	return p.err
}

// check turns a failed delivery check into the command's error, so that a
// run that lost or reordered events exits non-zero.
func (res *watchResult) check() error {
	d := res.Delivery
	if d.CompleteFast == d.Watchers && d.CompleteSlow == d.SlowWatchers {
		return nil
	}
	return errors.New("delivery check failed: not every watcher received every event once and in order (see report)")
}

type errWriter struct {
	w   io.Writer
	err error
}

func (p *errWriter) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
