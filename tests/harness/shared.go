package harness

import (
	"fmt"
	"os"
	"sync"
)

// A shared member serves every test of a package, for packages whose tests
// only need some member to talk to and use keys of their own: starting one
// per test would cost more than the tests. It is started from a setup of
// Main (there is no test to own it yet) and stopped by Main once the tests
// are done.

var (
	sharedMu sync.Mutex
	shared   []*sharedMember
)

type sharedMember struct {
	*Member
	dir string // holds its data dir and log; removed at the end
}

// StartShared starts bin as the member f describes (defaults as
// NewMember's), for a setup of Main. Main stops it after the tests, fails
// the run if it did not exit cleanly, and shows the end of its log if the
// run failed. A start that lost a port the harness picked (see
// LostPortRace) is retried on fresh ones.
func StartShared(bin string, f Flags) (*Member, error) {
	picked := f.ClientURL == "" && f.PeerURL == ""
	for attempt := 1; ; attempt++ {
		m, err := startShared(bin, f)
		if err == nil || attempt == 5 || !picked || m == nil || !m.LostPortRace() {
			return m, err
		}
	}
}

func startShared(bin string, f Flags) (*Member, error) {
	dir, err := os.MkdirTemp("", "cairn-shared-")
	if err != nil {
		return nil, err
	}
	m, err := placeMember(bin, f, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	sharedMu.Lock()
	shared = append(shared, &sharedMember{Member: m, dir: dir})
	sharedMu.Unlock()
	if err := m.Start(); err != nil {
		return m, fmt.Errorf("%w\n%s", err, m.LogTail(20))
	}
	return m, nil
}

// stopShared stops the shared members, the latest first, and returns the
// run's exit code: code, or 1 if a member did not exit cleanly. Their logs
// are shown when the run failed.
func stopShared(code int) int {
	sharedMu.Lock()
	ms := shared
	shared = nil
	sharedMu.Unlock()
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if m.Running() {
			if err := CleanExit(m.Bin, m.Stop()); err != nil {
				fmt.Fprintf(os.Stderr, "stopping shared member %s: %v\n", m.Name, err)
				code = 1
			}
		}
		if code != 0 {
			fmt.Fprintf(os.Stderr, "log of shared member %s:\n%s\n", m.Name, m.LogTail(200))
		}
		os.RemoveAll(m.dir)
	}
	return code
}
