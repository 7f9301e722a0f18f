package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		ok     bool
	}{
		{"healthy", 200, `{"health":"true","reason":""}`, true},
		{"no leader", 503, `{"health":"false","reason":"RAFT NO LEADER"}`, false},
		{"false with 200", 200, `{"health":"false"}`, false},
		{"not json", 200, `ok`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(c.status)
				w.Write([]byte(c.body))
			}))
			defer srv.Close()
			if err := check(srv.URL+"/health", time.Second); (err == nil) != c.ok {
				t.Fatalf("check: %v, want ok=%v", err, c.ok)
			}
		})
	}
	if err := check("http://127.0.0.1:1/health", time.Second); err == nil {
		t.Fatal("check of a closed port succeeded")
	}
}
