package cluster

import (
	"strings"
	"testing"
	"time"
)

func TestLineClock(t *testing.T) {
	tick := time.Unix(0, 0)
	now := func() time.Time { tick = tick.Add(time.Second); return tick }
	l := newLineClock([]string{"ready to serve", "panic"}, now)
	var log strings.Builder
	l.reset(&log)
	writes := []string{
		`{"msg":"starting"}` + "\n" + `{"msg":"rea`, // 1 s: the line is split
		`dy to serve client requests"}`,             // 2 s: no newline yet
		"\n",                                        // 3 s: the line ends here
		"ready to serve again\n",                    // 4 s: seen already
	}
	for _, w := range writes {
		if _, err := l.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	if log.String() != strings.Join(writes, "") {
		t.Errorf("log copy = %q", log.String())
	}
	if at, ok := l.seen("ready to serve"); !ok || !at.Equal(time.Unix(3, 0)) {
		t.Errorf("ready seen at %v, %v; want 3 s (when its line ended)", at, ok)
	}
	if _, ok := l.seen("panic"); ok {
		t.Error("a line that never came was seen")
	}
	l.reset(&log)
	if _, ok := l.seen("ready to serve"); ok {
		t.Error("a new start still reports the previous start's line")
	}
}
