package freeport

import (
	"net"
	"testing"
)

func TestURLIsBindable(t *testing.T) {
	u := URL(t)
	if u.Scheme != "http" {
		t.Fatalf("scheme %q", u.Scheme)
	}
	l, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatalf("the port given is not free: %v", err)
	}
	l.Close()
}
