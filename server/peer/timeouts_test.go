package peer

import (
	"context"
	"net"
	"testing"
	"time"
)

// The stream client's connections get --raft-read-timeout and
// --raft-write-timeout as idle deadlines; zero values mean etcd's 5s.
func TestStreamConnTimeouts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tests := []struct {
		name                string
		read, write         time.Duration
		wantRead, wantWrite time.Duration
	}{
		{"defaults", 0, 0, 5 * time.Second, 5 * time.Second},
		{"configured", 7 * time.Second, 9 * time.Second, 7 * time.Second, 9 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(Config{ID: 1, Raft: newRecorder(), ConnReadTimeout: tc.read, ConnWriteTimeout: tc.write})
			if err := tr.Start(); err != nil {
				t.Fatal(err)
			}
			defer tr.Stop()
			dial := tr.clients.stream.Transport.(*schemeTransport).tcp.DialContext
			c, err := dial(context.Background(), "tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			dc, ok := c.(*deadlineConn)
			if !ok {
				t.Fatalf("stream connection is a %T, want *deadlineConn", c)
			}
			if dc.read != tc.wantRead || dc.write != tc.wantWrite {
				t.Errorf("read/write timeouts %v/%v, want %v/%v", dc.read, dc.write, tc.wantRead, tc.wantWrite)
			}
		})
	}
}
