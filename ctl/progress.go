package ctl

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress is the bar the checks draw on stderr while they run, in the
// shape of etcdctl's: "n / total [--->____] p% r p/s", redrawn every
// 200ms and ended with a newline.
type progress struct {
	w           io.Writer
	total       int64
	start       time.Time
	mu          sync.Mutex
	n           int64
	done, ended chan struct{}
}

const progressWidth = 100

func startProgress(w io.Writer, total int64) *progress {
	p := &progress{w: w, total: total, start: time.Now(), done: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(p.ended)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				p.draw("\n")
				return
			case <-t.C:
				p.draw("")
			}
		}
	}()
	return p
}

func (p *progress) add(n int64) {
	p.mu.Lock()
	p.n += n
	p.mu.Unlock()
}

// finish draws the final state and stops the redraws.
func (p *progress) finish() {
	close(p.done)
	<-p.ended
}

func (p *progress) draw(end string) {
	p.mu.Lock()
	n := p.n
	p.mu.Unlock()
	speed := "?"
	if secs := time.Since(p.start).Seconds(); n > 0 && secs > 0 {
		speed = fmt.Sprintf("%.0f", float64(n)/secs)
	}
	pct := 0.0
	if p.total > 0 {
		pct = float64(min(n, p.total)) / float64(p.total)
	}
	head := fmt.Sprintf("%d / %d ", n, p.total)
	tail := fmt.Sprintf(" %.2f%% %s p/s", pct*100, speed)
	fmt.Fprint(p.w, head+bar(progressWidth-len(head)-len(tail)-2, pct)+tail+end)
}

// bar is a bar of width cells, filled to pct with "-" and a ">" head.
func bar(width int, pct float64) string {
	width = max(width, 1)
	filled := int(pct * float64(width))
	var b strings.Builder
	b.WriteByte('[')
	switch {
	case filled >= width:
		b.WriteString(strings.Repeat("-", width))
	case filled > 0:
		b.WriteString(strings.Repeat("-", filled-1) + ">" + strings.Repeat("_", width-filled))
	default:
		b.WriteString(strings.Repeat("_", width))
	}
	b.WriteByte(']')
	return b.String()
}
