//go:build linux

package embed

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func setReuseAddress(c syscall.RawConn) error { return setSocketFlag(c, unix.SO_REUSEADDR) }

func setReusePort(c syscall.RawConn) error { return setSocketFlag(c, unix.SO_REUSEPORT) }

// setSocketFlag turns on the SOL_SOCKET option opt; unlike a bare Control
// callback it reports setsockopt's error.
func setSocketFlag(c syscall.RawConn, opt int) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, 1)
	}); err != nil {
		return err
	}
	return serr
}
