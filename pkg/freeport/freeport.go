// Package freeport gives tests that start servers on real sockets a
// loopback address that is free right now. Another process may take it
// before the server binds it; tests that start many servers retry on
// "address already in use" (see tests/harness).
package freeport

import (
	"net"
	"net/url"
	"testing"
)

// URL is an http URL on a free loopback port.
func URL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}
