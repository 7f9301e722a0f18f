package cluster

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"time"
)

// lineClock is a server's stdout and stderr: it copies everything to the
// log file and notes when a line holding each watched substring first
// arrived. A pipe delivers a line as soon as the server writes it, so the
// arrival time is the moment the server logged it, and the log's own
// timestamp format (which differs between servers) does not matter.
type lineClock struct {
	watch []string
	now   func() time.Time

	mu      sync.Mutex
	out     io.Writer
	partial []byte
	first   map[string]time.Time
}

func newLineClock(watch []string, now func() time.Time) *lineClock {
	return &lineClock{watch: watch, now: now, first: map[string]time.Time{}}
}

// reset starts a new process's output: nothing seen yet, copy to out.
func (l *lineClock) reset(out io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.out, l.partial = out, nil
	clear(l.first)
}

func (l *lineClock) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.watch) > 0 {
		l.scan(p)
	}
	return l.out.Write(p)
}

// scan checks every line completed by p; a line split over writes is
// checked once it ends.
func (l *lineClock) scan(p []byte) {
	at := l.now()
	for {
		nl := bytes.IndexByte(p, '\n')
		if nl < 0 {
			l.partial = append(l.partial, p...)
			return
		}
		line := string(append(l.partial, p[:nl]...))
		l.partial, p = l.partial[:0], p[nl+1:]
		for _, w := range l.watch {
			if _, done := l.first[w]; !done && strings.Contains(line, w) {
				l.first[w] = at
			}
		}
	}
}

func (l *lineClock) seen(substr string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.first[substr]
	return t, ok
}
