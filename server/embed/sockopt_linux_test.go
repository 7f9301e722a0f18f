//go:build linux

package embed

import (
	"net/url"
	"testing"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/config"
)

// With SO_REUSEPORT two listeners may bind one address; without, the
// second bind fails. SO_REUSEADDR alone does not allow it for two live
// listeners, but must still bind.
func TestListenSocketOptions(t *testing.T) {
	tests := []struct {
		name        string
		opts        config.SocketOpts
		secondBinds bool
	}{
		{"none", config.SocketOpts{}, false},
		{"reuse address", config.SocketOpts{ReuseAddress: true}, false},
		{"reuse port", config.SocketOpts{ReusePort: true}, true},
		{"both", config.SocketOpts{ReusePort: true, ReuseAddress: true}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lc := listenConfig(tc.opts, zap.NewNop())
			first, err := listen(url.URL{Scheme: "http", Host: "127.0.0.1:0"}, nil, lc)
			if err != nil {
				t.Fatalf("first listener: %v", err)
			}
			defer first.Close()
			again := url.URL{Scheme: "http", Host: first.Addr().String()}
			second, err := listen(again, nil, lc)
			if second != nil {
				defer second.Close()
			}
			if (err == nil) != tc.secondBinds {
				t.Fatalf("second listener on %s: err = %v, want it to bind: %v", again.Host, err, tc.secondBinds)
			}
		})
	}
}
