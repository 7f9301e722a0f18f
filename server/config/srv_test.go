package config

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
)

// fakeDNS answers SRV lookups from records and resolves "host:port" by a
// table of host => IP (hosts not listed fail).
type fakeDNS struct {
	records map[string][]*net.SRV // "_service._tcp.domain" => records
	hosts   map[string]string
}

func (f fakeDNS) install(t *testing.T) {
	oldSRV, oldResolve := lookupSRV, resolveTCPAddr
	t.Cleanup(func() { lookupSRV, resolveTCPAddr = oldSRV, oldResolve })
	lookupSRV = func(service, proto, name string) (string, []*net.SRV, error) {
		key := fmt.Sprintf("_%s._%s.%s", service, proto, name)
		if rs, ok := f.records[key]; ok {
			return key, rs, nil
		}
		return "", nil, errors.New("no such host")
	}
	resolveTCPAddr = func(network, address string) (*net.TCPAddr, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		ip, ok := f.hosts[strings.TrimSuffix(host, ".")]
		if net.ParseIP(host) != nil {
			ip, ok = host, true
		}
		if !ok {
			return nil, fmt.Errorf("lookup %s: no such host", host)
		}
		return net.ResolveTCPAddr(network, net.JoinHostPort(ip, port))
	}
}

func TestClusterFromDNS(t *testing.T) {
	hosts := map[string]string{"a.example.com": "10.0.0.1", "b.example.com": "10.0.0.2", "c.example.com": "10.0.0.3"}
	srv := func(target string, port uint16) *net.SRV { return &net.SRV{Target: target, Port: port} }
	tests := []struct {
		name    string
		args    []string
		records map[string][]*net.SRV
		want    string
		wantErr string
	}{
		{
			name:    "http records, self by address",
			args:    []string{"--name=b", "--initial-advertise-peer-urls=http://10.0.0.2:2380"},
			records: map[string][]*net.SRV{"_etcd-server._tcp.example.com": {srv("a.example.com.", 2380), srv("b.example.com.", 2380), srv("c.example.com.", 2380)}},
			want:    "0=http://a.example.com:2380,b=http://b.example.com:2380,1=http://c.example.com:2380",
		},
		{
			name: "ssl records first, then http, with a service name",
			args: []string{"--name=a", "--initial-advertise-peer-urls=https://10.0.0.1:2380", "--discovery-srv-name=prod"},
			records: map[string][]*net.SRV{
				"_etcd-server-ssl-prod._tcp.example.com": {srv("a.example.com.", 2380)},
				"_etcd-server-prod._tcp.example.com":     {srv("c.example.com.", 2380)},
			},
			want: "a=https://a.example.com:2380,0=http://c.example.com:2380",
		},
		{
			name:    "self missing from the records",
			args:    []string{"--name=z", "--initial-advertise-peer-urls=http://10.0.0.9:2380"},
			records: map[string][]*net.SRV{"_etcd-server._tcp.example.com": {srv("a.example.com.", 2380)}},
			wantErr: `cannot find local etcd member "z" in SRV records`,
		},
		{
			name:    "scheme mismatch",
			args:    []string{"--name=a", "--initial-advertise-peer-urls=http://10.0.0.1:2380"},
			records: map[string][]*net.SRV{"_etcd-server-ssl._tcp.example.com": {srv("a.example.com.", 2380)}},
			wantErr: "bootstrap at https://a.example.com:2380 from DNS for etcd-server-ssl has scheme mismatch with expected peer http://10.0.0.1:2380",
		},
		{
			name:    "no records at all",
			args:    []string{"--name=a", "--initial-advertise-peer-urls=http://10.0.0.1:2380"},
			wantErr: "error querying DNS SRV records for _etcd-server",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fakeDNS{records: tt.records, hosts: hosts}.install(t)
			args := append([]string{"--discovery-srv=example.com", "--listen-peer-urls=http://127.0.0.1:2380"}, tt.args...)
			c, err := Parse(args, nil)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			got, err := c.ClusterFromDNS(nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ClusterFromDNS = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
