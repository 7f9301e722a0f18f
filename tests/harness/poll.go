package harness

import "time"

// Poll calls cond, sleeping interval between calls, until it returns true
// (Poll then returns true) or returns false once bound has passed (Poll
// returns false). It is the wait-with-a-deadline loop that tests write
// around a condition, so each test keeps only its condition and its
// failure message.
func Poll(bound, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(bound)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}
