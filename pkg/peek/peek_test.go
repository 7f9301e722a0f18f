package peek

import (
	"io"
	"net"
	"testing"
)

// TestConnGivesPeekedBytesBackFirst reads, through small buffers, the
// peeked bytes and then what the peer sends after them.
func TestConnGivesPeekedBytesBackFirst(t *testing.T) {
	tests := []struct {
		name   string
		peeked string
		rest   string
		buf    int
	}{
		{"nothing peeked", "", "hello", 3},
		{"peeked fits the buffer", "PRI", " * HTTP/2.0", 8},
		{"peeked spans reads", "\x16\x03\x01", "tls", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			go func() {
				client.Write([]byte(tt.rest))
				client.Close()
			}()
			c := NewConn(server, []byte(tt.peeked))
			defer c.Close()
			var got []byte
			buf := make([]byte, tt.buf)
			for {
				n, err := c.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if want := tt.peeked + tt.rest; string(got) != want {
				t.Fatalf("read %q, want %q", got, want)
			}
		})
	}
}
