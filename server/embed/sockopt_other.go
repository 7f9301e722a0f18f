//go:build !linux

package embed

import (
	"fmt"
	"runtime"
	"syscall"
)

// Socket reuse options are implemented for Linux only; elsewhere asking for
// them fails the listener instead of being silently ignored.

func setReuseAddress(syscall.RawConn) error {
	return fmt.Errorf("cairn: --socket-reuse-address is not supported on %s", runtime.GOOS)
}

func setReusePort(syscall.RawConn) error {
	return fmt.Errorf("cairn: --socket-reuse-port is not supported on %s", runtime.GOOS)
}
