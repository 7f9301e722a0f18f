package compactor

import (
	"time"

	"go.uber.org/zap"
)

// periodicWindow is the sampling plan of periodic mode for a retention:
// the compaction interval after the first compaction, the sampling (and
// retry) step, and how many samples cover one retention.
type periodicWindow struct {
	interval time.Duration
	step     time.Duration
	samples  int
}

func newPeriodicWindow(retention time.Duration) periodicWindow {
	w := periodicWindow{interval: min(retention, time.Hour)}
	// A retention under 10ns would give a zero step (etcd divides by it).
	w.step = max(w.interval/samplesPerInterval, time.Nanosecond)
	w.samples = int(retention/w.step) + 1
	return w
}

// runPeriodic samples the revision every step and compacts to the sample
// taken one retention ago. The first compaction waits for a whole
// retention; later ones for one interval after the last success.
func (c *Compactor) runPeriodic() {
	retention := c.cfg.Retention
	w := newPeriodicWindow(retention)
	samples := make([]int64, 0, w.samples+1)
	lastSuccess := c.clock.Now()
	wait := retention
	var lastRev int64
	for {
		samples = append(samples, c.cfg.Rev())
		if len(samples) > w.samples {
			samples = samples[1:] // samples[0] is the revision of one retention ago
		}
		if !c.sleep(w.step) {
			return
		}
		rev := samples[0]
		if c.paused.Load() || c.clock.Now().Sub(lastSuccess) < wait || rev == lastRev {
			continue
		}
		wait = w.interval
		if !c.compactLogged(ModePeriodic, rev, zap.Duration("compact-period", retention), w.step) {
			continue
		}
		lastRev, lastSuccess = rev, c.clock.Now()
	}
}
