// Package peek serves a connection whose first bytes were read ahead to
// tell its protocol (TLS or plaintext, HTTP/2 preface or HTTP/1): the
// bytes go back in front of the rest, so the server that takes the
// connection over reads it from its start.
package peek

import "net"

// Conn is c with bytes already read from it given back first.
type Conn struct {
	net.Conn // the connection the bytes were read from
	peeked   []byte
}

// NewConn returns c with peeked, the bytes read from it so far, given back
// before c is read on.
func NewConn(c net.Conn, peeked []byte) *Conn {
	return &Conn{Conn: c, peeked: peeked}
}

// Read returns the peeked bytes not yet returned, then reads from the
// connection.
func (c *Conn) Read(b []byte) (int, error) {
	if len(c.peeked) > 0 {
		n := copy(b, c.peeked)
		c.peeked = c.peeked[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}
