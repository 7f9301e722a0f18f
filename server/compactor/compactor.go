package compactor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/errs"
)

// Modes of --auto-compaction-mode.
const (
	ModePeriodic = "periodic"
	ModeRevision = "revision"
)

// revisionInterval is how often revision mode looks at the current revision
// (etcd's constant, not configurable).
const revisionInterval = 5 * time.Minute

// samplesPerInterval divides the periodic compaction interval into sampling
// steps: one step is also the delay before a failed compaction is retried.
const samplesPerInterval = 10

// Clock is the compactor's source of time.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Config configures New.
type Config struct {
	// Mode is ModePeriodic or ModeRevision.
	Mode string
	// Retention is what ParseRetention returned: a duration in periodic
	// mode, a revision count (as a Duration) in revision mode. It must be
	// positive: 0 means auto compaction is off, and the caller does not
	// create a compactor then.
	Retention time.Duration
	// Rev returns the store's current revision.
	Rev func() int64
	// Compact compacts the store to rev through the member's normal
	// request path; it returns when the compaction is applied or failed.
	Compact func(ctx context.Context, rev int64) error
	// Logger defaults to a no-op logger; Clock to the real time.
	Logger *zap.Logger
	Clock  Clock
}

// Compactor runs one mode's loop in its own goroutine between Run and Stop.
type Compactor struct {
	cfg    Config
	lg     *zap.Logger
	clock  Clock
	paused atomic.Bool

	ctx    context.Context
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// New checks cfg and returns a compactor that is not running yet.
func New(cfg Config) (*Compactor, error) {
	if cfg.Mode != ModePeriodic && cfg.Mode != ModeRevision {
		return nil, fmt.Errorf("unsupported compaction mode %s", cfg.Mode)
	}
	if cfg.Retention <= 0 {
		return nil, fmt.Errorf("auto compaction retention must be positive, got %v", cfg.Retention)
	}
	if cfg.Rev == nil || cfg.Compact == nil {
		return nil, errors.New("compactor: Rev and Compact are required")
	}
	c := &Compactor{cfg: cfg, lg: cfg.Logger, clock: cfg.Clock}
	if c.lg == nil {
		c.lg = zap.NewNop()
	}
	if c.clock == nil {
		c.clock = realClock{}
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Run starts the loop. Call it once.
func (c *Compactor) Run() {
	loop := c.runRevision
	if c.cfg.Mode == ModePeriodic {
		loop = c.runPeriodic
	}
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		loop()
	}()
}

// Stop ends the loop, cancelling a compaction in flight, and waits for it.
func (c *Compactor) Stop() {
	c.cancel()
	c.done.Wait()
}

// Pause keeps the loop from compacting until Resume; periodic mode goes on
// sampling revisions meanwhile, so it resumes with a full window.
func (c *Compactor) Pause() { c.paused.Store(true) }

// Resume undoes Pause.
func (c *Compactor) Resume() { c.paused.Store(false) }

// sleep waits d; false once Stop was called.
func (c *Compactor) sleep(d time.Duration) bool {
	select {
	case <-c.ctx.Done():
		return false
	case <-c.clock.After(d):
		return true
	}
}

// compact runs one compaction to rev. A revision that is already compacted
// counts as done: another compaction got there first.
func (c *Compactor) compact(rev int64) error {
	err := c.cfg.Compact(c.ctx, rev)
	if err == nil || errors.Is(err, errs.ErrCompacted) {
		return nil
	}
	return err
}

// ParseRetention reads --auto-compaction-retention for mode as etcd does: a
// non-negative integer is hours in periodic mode and a revision count in
// revision mode; anything else must be a Go duration (also in revision
// mode, where it then counts nanoseconds as revisions, as in etcd). A
// negative result is refused: etcd would spin compacting without pause.
func ParseRetention(mode, retention string) (time.Duration, error) {
	if retention == "" {
		retention = "0"
	}
	d, err := retentionValue(mode, retention)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("--auto-compaction-retention %q must not be negative", retention)
	}
	return d, nil
}

// unitOfCount is what a bare count in --auto-compaction-retention means in
// each mode: hours in periodic mode, revisions (counted as nanoseconds of a
// Duration) in revision mode.
var unitOfCount = map[string]time.Duration{
	ModePeriodic: time.Hour,
	ModeRevision: 1,
}

// retentionValue reads retention as a count in mode's unit, or else as a Go
// duration. An unknown non-empty mode gives 0 for a count, as in etcd; the
// mode itself is checked elsewhere.
func retentionValue(mode, retention string) (time.Duration, error) {
	n, countErr := strconv.Atoi(retention)
	if countErr != nil || n < 0 {
		d, err := time.ParseDuration(retention)
		if err != nil {
			return 0, fmt.Errorf("error parsing CompactionRetention: %w", err)
		}
		return d, nil
	}
	if mode == "" {
		return 0, errors.New("--auto-compaction-mode is undefined")
	}
	return time.Duration(n) * unitOfCount[mode], nil
}
