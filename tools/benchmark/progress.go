package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cairnkv/cairn/pkg/fileutil"
)

// progressInterval is how often the progress bar is redrawn.
const progressInterval = 200 * time.Millisecond

// progressWidth is the number of cells in the bar.
const progressWidth = 40

// progressBar redraws one line on stderr showing how many of total items
// are done. It reads the count through done, so the workloads need no
// extra bookkeeping: they already count what they record.
type progressBar struct {
	w     io.Writer
	total int64
	done  func() int64
	start time.Time

	stop    chan struct{}
	stopped sync.WaitGroup
}

// startProgress starts a bar on w, or returns nil (a bar that does
// nothing) when g disables it or w is not a terminal: a bar redrawn with
// carriage returns would only clutter a log file or a pipe.
func startProgress(g *globalConfig, w io.Writer, total int64, done func() int64) *progressBar {
	if g.noProgress || !fileutil.IsTerminal(w) || total <= 0 {
		return nil
	}
	p := &progressBar{w: w, total: total, done: done, start: time.Now(), stop: make(chan struct{})}
	p.stopped.Go(p.loop)
	return p
}

func (p *progressBar) loop() {
	tick := time.NewTicker(progressInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			fmt.Fprint(p.w, "\r"+renderProgress(p.done(), p.total, time.Since(p.start)))
		case <-p.stop:
			return
		}
	}
}

// finish draws the final state and ends the line, so the report that
// follows starts on a line of its own.
func (p *progressBar) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	p.stopped.Wait()
	fmt.Fprint(p.w, "\r"+renderProgress(p.done(), p.total, time.Since(p.start))+"\n")
}

// renderProgress draws "[=====>    ] done/total pct% elapsed".
func renderProgress(done, total int64, elapsed time.Duration) string {
	done = min(max(done, 0), total)
	filled := int(done * progressWidth / total)
	bar := strings.Repeat("=", filled)
	if filled < progressWidth {
		bar += ">" + strings.Repeat(" ", progressWidth-filled-1)
	}
	return fmt.Sprintf("[%s] %d/%d %3d%% %s", bar, done, total, done*100/total, elapsed.Truncate(time.Second))
}
