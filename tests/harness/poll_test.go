package harness

import (
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	calls := 0
	if !Poll(time.Minute, time.Millisecond, func() bool { calls++; return calls == 3 }) || calls != 3 {
		t.Errorf("a condition true on the third call: Poll stopped after %d calls", calls)
	}
	calls = 0
	if Poll(0, time.Millisecond, func() bool { calls++; return false }) || calls != 1 {
		t.Errorf("a condition never true with no time: %d calls, want false after 1", calls)
	}
}
