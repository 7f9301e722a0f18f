package harness

import (
	"fmt"
	"os"

	"go.uber.org/goleak"
)

// NoLeaks turns the exit code of a passing run into a failure if the
// tests left goroutines behind, for packages whose tests run clients in
// the test binary:
//
//	func TestMain(m *testing.M) { os.Exit(harness.NoLeaks(harness.Main(m))) }
//
// A failed run keeps its code unchecked: its leaks are most likely those
// of the tests that failed.
func NoLeaks(code int, opts ...goleak.Option) int {
	if code != 0 {
		return code
	}
	if err := goleak.Find(opts...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
