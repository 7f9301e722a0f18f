package embed

import (
	"net"
	"syscall"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/config"
)

// listenConfig is the net.ListenConfig of every TCP listener (client, peer,
// client HTTP and metrics URLs): it sets SO_REUSEADDR
// (--socket-reuse-address) and SO_REUSEPORT (--socket-reuse-port) before
// the socket binds, as etcd does. Unix sockets get no options, as in etcd.
func listenConfig(o config.SocketOpts, lg *zap.Logger) *net.ListenConfig {
	if !o.ReuseAddress && !o.ReusePort {
		return &net.ListenConfig{}
	}
	lg.Info("configuring socket options",
		zap.Bool("reuse-address", o.ReuseAddress), zap.Bool("reuse-port", o.ReusePort))
	return &net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		if o.ReuseAddress {
			if err := setReuseAddress(c); err != nil {
				return err
			}
		}
		if o.ReusePort {
			return setReusePort(c)
		}
		return nil
	}}
}
