package main

import (
	"fmt"
	"io"

	"github.com/cairnkv/cairn/tools/benchmark/procfs"
)

// watcherMemory is what the servers' resident memory grew by while the
// run created its watchers: the RSS of the --rss-pid processes (VmRSS,
// summed) just before the first stream opened and once every watcher was
// confirmed, before any put. Per watcher is the growth divided by the
// watchers created, so it includes each stream's share (streams / watchers
// of a stream's cost). It is an estimate: the Go heap grows in steps, so
// use enough watchers (thousands) that a step is small beside the total.
type watcherMemory struct {
	Watchers        int     `json:"watchers"`
	RSSBeforeBytes  int64   `json:"rss_before_bytes"`
	RSSAfterBytes   int64   `json:"rss_after_bytes"`
	BytesPerWatcher float64 `json:"bytes_per_watcher"`
}

// currentRSS sums the resident set size (VmRSS) of pids.
func currentRSS(root string, pids []int) (int64, error) {
	var total int64
	for _, pid := range pids {
		mem, err := procfs.ReadMemory(root, pid)
		if err != nil {
			return 0, err
		}
		total += mem.RSSBytes
	}
	return total, nil
}

// newWatcherMemory computes the per-watcher figure; nil when no server
// process is watched.
func newWatcherMemory(pids []int, watchers int, before, after int64) *watcherMemory {
	if len(pids) == 0 || watchers == 0 {
		return nil
	}
	return &watcherMemory{
		Watchers: watchers, RSSBeforeBytes: before, RSSAfterBytes: after,
		BytesPerWatcher: float64(after-before) / float64(watchers),
	}
}

func (m *watcherMemory) writeText(w io.Writer) error {
	if m == nil {
		return nil
	}
	_, err := fmt.Fprintf(w, "\n=== Server RSS per watcher (growth while creating the watchers, before any put) ===\n"+
		"  RSS before:\t%.1f MiB\n  RSS after:\t%.1f MiB (%d watchers)\n  Per watcher:\t%.0f bytes\n",
		float64(m.RSSBeforeBytes)/(1<<20), float64(m.RSSAfterBytes)/(1<<20), m.Watchers, m.BytesPerWatcher)
	return err
}
