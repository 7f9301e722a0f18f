package ctl

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cairnkv/cairn/pkg/bytesize"
)

// transferProgress counts the bytes of a snapshot download and redraws one
// status line on a terminal: received so far, of the expected size when
// the member told it, and the rate. It is written to between Start and
// Finish from one goroutine while its ticker redraws from another.
type transferProgress struct {
	w        io.Writer
	expected int64 // the member's db size, 0 when unknown
	now      func() time.Time
	start    time.Time

	mu       sync.Mutex
	received int64
	stop     chan struct{}
	stopped  chan struct{}
}

func newTransferProgress(w io.Writer, expected int64, now func() time.Time) *transferProgress {
	return &transferProgress{w: w, expected: expected, now: now, start: now()}
}

// Start redraws the line every interval until Finish.
func (p *transferProgress) Start(interval time.Duration) {
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw()
			}
		}
	}()
}

func (p *transferProgress) Write(b []byte) (int, error) {
	p.mu.Lock()
	p.received += int64(len(b))
	p.mu.Unlock()
	return len(b), nil
}

func (p *transferProgress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\033[K%s", p.line())
}

// line is the status: "Saving snapshot: 12 MB of 40 MB (30%), 8.1 MB/s".
func (p *transferProgress) line() string {
	s := "Saving snapshot: " + bytesize.SI(uint64(p.received))
	if p.expected > 0 {
		pct := min(100, 100*p.received/p.expected)
		s += fmt.Sprintf(" of %s (%d%%)", bytesize.SI(uint64(p.expected)), pct)
	}
	if secs := p.now().Sub(p.start).Seconds(); secs > 0 {
		s += fmt.Sprintf(", %s/s", bytesize.SI(uint64(float64(p.received)/secs)))
	}
	return s
}

// Finish stops the redraws and replaces the line with the summary: size
// and time taken.
func (p *transferProgress) Finish() {
	if p.stop != nil {
		close(p.stop)
		<-p.stopped
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	took := p.now().Sub(p.start).Round(time.Millisecond)
	fmt.Fprintf(p.w, "\r\033[KSnapshot of %s received in %v\n", bytesize.SI(uint64(p.received)), took)
}
