package config

import "testing"

func TestInferLocalAddr(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"gate off", []string{"--initial-advertise-peer-urls=https://192.168.100.110:2380"}, ""},
		{"default URL", []string{"--feature-gates=SetMemberLocalAddr=true"}, ""},
		{"unspecified", []string{"--feature-gates=SetMemberLocalAddr=true", "--initial-advertise-peer-urls=https://0.0.0.0:2380"}, ""},
		{"IPv4", []string{"--feature-gates=SetMemberLocalAddr=true", "--initial-advertise-peer-urls=https://192.168.100.110:2380"}, "192.168.100.110"},
		{"IPv6", []string{"--feature-gates=SetMemberLocalAddr=true", "--initial-advertise-peer-urls=https://[2001:db8::3]:2380"}, "2001:db8::3"},
		{"hostname skipped", []string{"--feature-gates=SetMemberLocalAddr=true", "--initial-advertise-peer-urls=https://a.example:2380,https://10.0.0.2:2380"}, "10.0.0.2"},
		{"loopback skipped", []string{"--feature-gates=SetMemberLocalAddr=true", "--initial-advertise-peer-urls=http://127.0.0.1:2380,http://10.1.1.1:2380"}, "10.1.1.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.args, nil)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := c.InferLocalAddr(nil); got != tt.want {
				t.Fatalf("InferLocalAddr = %q, want %q", got, tt.want)
			}
		})
	}
}
