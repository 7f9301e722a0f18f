package harness

import (
	"bytes"
	"io"
	"sync"
)

// lineWatcher copies a process's output to w and closes found once a line
// containing needle has been written, however the output is split across
// writes.
type lineWatcher struct {
	mu     sync.Mutex
	w      io.Writer
	needle []byte
	tail   []byte // the unfinished last line, while not found
	found  chan struct{}
	done   bool
}

func newLineWatcher(w io.Writer, needle string) *lineWatcher {
	return &lineWatcher{w: w, needle: []byte(needle), found: make(chan struct{})}
}

func (l *lineWatcher) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.tail = append(l.tail, p...)
		if bytes.Contains(l.tail, l.needle) {
			l.done = true
			l.tail = nil
			close(l.found)
		} else if i := bytes.LastIndexByte(l.tail, '\n'); i >= 0 {
			l.tail = append(l.tail[:0], l.tail[i+1:]...)
		}
	}
	return l.w.Write(p)
}
