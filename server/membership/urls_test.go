package membership

import (
	"reflect"
	"testing"
)

func TestParsePeerURLs(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string // nil: refused
	}{
		{"plain", []string{"http://10.0.0.1:2380"}, []string{"http://10.0.0.1:2380"}},
		{"sorted and trimmed", []string{" https://b:2380", "http://a:2380 "}, []string{"http://a:2380", "https://b:2380"}},
		{"scheme lowered", []string{"HTTP://a:2380"}, []string{"http://a:2380"}},
		{"unix taken as is", []string{"unix://localhost:2380", "unixs://sock/p"}, []string{"unix://localhost:2380", "unixs://sock/p"}},
		{"empty host is a host:port", []string{"http://:2380"}, []string{"http://:2380"}},
		{"no port", []string{"http://a"}, nil},
		{"path", []string{"http://a:2380/x"}, nil},
		{"root path", []string{"http://a:2380/"}, nil},
		{"other scheme", []string{"ftp://a:2380"}, nil},
		{"no scheme", []string{"a:2380"}, nil},
		{"empty", []string{""}, nil},
		{"none", nil, nil},
		{"one bad", []string{"http://a:2380", "http://b"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePeerURLs(tt.in)
			if tt.want == nil {
				if err == nil {
					t.Fatalf("ParsePeerURLs(%q) = %q, want an error", tt.in, got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParsePeerURLs(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}
