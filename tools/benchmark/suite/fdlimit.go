package main

import (
	"fmt"
	"syscall"
)

// raiseFileLimit sets this process's soft limit of open files to at least
// need, for the servers and the load generator it starts to inherit; a
// hard limit below need is an error that says what to do, rather than a
// case failing with "too many open files".
func raiseFileLimit(need uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("reading the open-file limit: %w", err)
	}
	if lim.Max < need {
		return fmt.Errorf("the open-file hard limit is %d, the %d-connection watch case needs %d: raise it (ulimit -Hn, or LimitNOFILE) and run again", lim.Max, watchScaleConns, need)
	}
	// Set it even when Go already raised ours at startup: Go gives child
	// processes the limit it found unless the program sets one itself.
	lim.Cur = max(lim.Cur, need)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raising the open-file limit to %d: %w", need, err)
	}
	return nil
}
