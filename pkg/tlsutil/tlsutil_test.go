package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCipherSuites(t *testing.T) {
	ids, err := CipherSuites([]string{
		"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", // legacy name
		"TLS_ECDHE_RSA_WITH_RC4_128_SHA",         // insecure, yet accepted as by etcd
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_RC4_128_SHA}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("ids = %v, want %v", ids, want)
	}
	if _, err := CipherSuites([]string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "not_found"}); err == nil ||
		err.Error() != `unexpected TLS cipher suite "not_found"` {
		t.Errorf("unknown suite: err = %v", err)
	}
	if ids, err := CipherSuites(nil); ids != nil || err != nil {
		t.Errorf("no suites = %v, %v; want nil, nil", ids, err)
	}
}

func TestVersion(t *testing.T) {
	for name, want := range map[string]uint16{"": 0, "TLS1.2": tls.VersionTLS12, "TLS1.3": tls.VersionTLS13} {
		if got, err := Version(name); got != want || err != nil {
			t.Errorf("Version(%q) = %v, %v", name, got, err)
		}
	}
	if _, err := Version("TLS1.1"); err == nil || err.Error() != `unexpected TLS version "TLS1.1" (must be one of: TLS1.2, TLS1.3)` {
		t.Errorf("TLS1.1: err = %v", err)
	}
}

func TestServerConfigErrors(t *testing.T) {
	c := newCA(t)
	cert, key, _ := c.issue("srv", opts{cn: "srv", ips: []string{"127.0.0.1"}})
	_, otherKey, _ := c.issue("other", opts{cn: "other"})
	expCert, expKey, _ := c.issue("exp", opts{cn: "exp", notAfter: time.Now().Add(-time.Minute)})
	missing := filepath.Join(t.TempDir(), "missing.pem")
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		info Info
		want string
	}{
		{"no key", Info{CertFile: cert}, "KeyFile and CertFile must both be present"},
		{"missing cert", Info{CertFile: missing, KeyFile: key}, "no such file or directory"},
		{"mismatched key", Info{CertFile: cert, KeyFile: otherKey}, "private key does not match public key"},
		{"expired", Info{CertFile: expCert, KeyFile: expKey}, "expired at"},
		{"half client pair", Info{CertFile: cert, KeyFile: key, ClientCertFile: cert}, "ClientKeyFile and ClientCertFile must both be present or both absent"},
		{"bad client pair", Info{CertFile: cert, KeyFile: key, ClientCertFile: cert, ClientKeyFile: otherKey}, "private key does not match public key"},
		{"cn and hostname", Info{CertFile: cert, KeyFile: key, AllowedCNs: []string{"a"}, AllowedHostnames: []string{"b"}}, "AllowedCNs and AllowedHostnames are mutually exclusive"},
		{"missing CA", Info{CertFile: cert, KeyFile: key, TrustedCAFile: missing}, "cannot read trusted CA file"},
		{"CA not PEM", Info{CertFile: cert, KeyFile: key, TrustedCAFile: notPEM}, "holds no PEM certificate"},
		{"missing CRL", Info{CertFile: cert, KeyFile: key, CRLFile: missing}, "cannot read CRL file"},
		{"bad CRL", Info{CertFile: cert, KeyFile: key, CRLFile: notPEM}, "cannot parse CRL file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.info.ServerConfig()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want containing %q", err, tc.want)
			}
		})
	}
}

func TestClientCertAuth(t *testing.T) {
	c := newCA(t)
	cert, key, _ := c.issue("srv", opts{cn: "srv", ips: []string{"127.0.0.1"}})
	cliCert, cliKey, _ := c.issue("cli", opts{cn: "alice"})
	other := newCA(t)
	foreignCert, foreignKey, _ := other.issue("foreign", opts{cn: "alice"})

	// A trusted CA alone requires client certificates, as in etcd.
	for _, info := range []Info{
		{CertFile: cert, KeyFile: key, TrustedCAFile: c.file, ClientCertAuth: true},
		{CertFile: cert, KeyFile: key, TrustedCAFile: c.file},
	} {
		srv, err := info.ServerConfig()
		if err != nil {
			t.Fatal(err)
		}
		if se, ce, _ := handshake(t, srv, c.clientCfg(cliCert, cliKey)); se != nil || ce != nil {
			t.Errorf("trusted client: server %v, client %v", se, ce)
		}
		if se, _, _ := handshake(t, srv, c.clientCfg("", "")); se == nil {
			t.Error("client without certificate accepted")
		}
		if se, _, _ := handshake(t, srv, c.clientCfg(foreignCert, foreignKey)); se == nil {
			t.Error("client with a certificate of another CA accepted")
		}
	}
	// Without either, no client certificate is asked for.
	srv, err := (&Info{CertFile: cert, KeyFile: key}).ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	if se, ce, st := handshake(t, srv, c.clientCfg("", "")); se != nil || ce != nil || st.Version < tls.VersionTLS12 {
		t.Errorf("server-only TLS: server %v, client %v, version %x", se, ce, st.Version)
	}
}

func TestVersionsAndALPN(t *testing.T) {
	c := newCA(t)
	cert, key, _ := c.issue("srv", opts{cn: "srv", ips: []string{"127.0.0.1"}})
	srv, err := (&Info{CertFile: cert, KeyFile: key, MaxVersion: tls.VersionTLS12,
		CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}}).ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	cli := c.clientCfg("", "")
	cli.NextProtos = []string{"h2"}
	se, ce, st := handshake(t, srv, cli)
	if se != nil || ce != nil {
		t.Fatalf("server %v, client %v", se, ce)
	}
	if st.Version != tls.VersionTLS12 || st.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 || st.NegotiatedProtocol != "h2" {
		t.Errorf("negotiated version %x suite %x proto %q", st.Version, st.CipherSuite, st.NegotiatedProtocol)
	}
	old := c.clientCfg("", "")
	old.MaxVersion = tls.VersionTLS11
	old.MinVersion = tls.VersionTLS10
	if se, _, _ := handshake(t, srv, old); se == nil {
		t.Error("TLS 1.1 client accepted")
	}
}

func TestAllowedCNsAndHostnames(t *testing.T) {
	c := newCA(t)
	cert, key, _ := c.issue("srv", opts{cn: "srv", ips: []string{"127.0.0.1"}})
	peerCert, peerKey, _ := c.issue("peer", opts{cn: "peer-b", dns: []string{"b.example"}})
	evilCert, evilKey, _ := c.issue("evil", opts{cn: "evil", dns: []string{"evil.example"}})
	for _, info := range []Info{
		{AllowedCNs: []string{"peer-a", "peer-b"}},
		{AllowedHostnames: []string{"a.example", "b.example"}},
	} {
		info.CertFile, info.KeyFile, info.TrustedCAFile, info.ClientCertAuth = cert, key, c.file, true
		srv, err := info.ServerConfig()
		if err != nil {
			t.Fatal(err)
		}
		if se, ce, _ := handshake(t, srv, c.clientCfg(peerCert, peerKey)); se != nil || ce != nil {
			t.Errorf("%v: allowed peer: server %v, client %v", info.AllowedCNs, se, ce)
		}
		se, _, _ := handshake(t, srv, c.clientCfg(evilCert, evilKey))
		if se == nil || !strings.Contains(se.Error(), "client certificate authentication failed") {
			t.Errorf("%v%v: other peer: server err %v", info.AllowedCNs, info.AllowedHostnames, se)
		}
	}

	// Dialing checks the server's certificate the same way.
	srv, err := (&Info{CertFile: cert, KeyFile: key}).ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	for cn, ok := range map[string]bool{"srv": true, "other": false} {
		cli, err := (&Info{CertFile: peerCert, KeyFile: peerKey, TrustedCAFile: c.file, AllowedCNs: []string{cn}}).ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		cli.ServerName = "127.0.0.1"
		if _, ce, _ := handshake(t, srv, cli); (ce == nil) != ok {
			t.Errorf("dialing with allowed CN %q: client err %v", cn, ce)
		}
	}
}

func TestClientSAN(t *testing.T) {
	c := newCA(t)
	cert, key, _ := c.issue("srv", opts{cn: "srv", ips: []string{"127.0.0.1"}})
	local, localKey, _ := c.issue("local", opts{cn: "p", ips: []string{"127.0.0.1"}})
	elsewhere, elsewhereKey, _ := c.issue("elsewhere", opts{cn: "p", ips: []string{"10.11.12.13"}})
	noSAN, noSANKey, _ := c.issue("nosan", opts{cn: "p"})
	for _, skip := range []bool{false, true} {
		srv, err := (&Info{CertFile: cert, KeyFile: key, TrustedCAFile: c.file, CheckClientSAN: !skip}).ServerConfig()
		if err != nil {
			t.Fatal(err)
		}
		for name, pair := range map[string][2]string{"local": {local, localKey}, "no SAN": {noSAN, noSANKey}} {
			if se, ce, _ := handshake(t, srv, c.clientCfg(pair[0], pair[1])); se != nil || ce != nil {
				t.Errorf("skip=%v %s: server %v, client %v", skip, name, se, ce)
			}
		}
		se, _, _ := handshake(t, srv, c.clientCfg(elsewhere, elsewhereKey))
		if skip != (se == nil) {
			t.Errorf("skip=%v: certificate for 10.11.12.13 from 127.0.0.1: server err %v", skip, se)
		}
	}
}

func TestCRLAndReload(t *testing.T) {
	c := newCA(t)
	cert, key, _ := c.issue("srv", opts{cn: "srv", ips: []string{"127.0.0.1"}})
	good, goodKey, _ := c.issue("good", opts{cn: "good"})
	bad, badKey, badSerial := c.issue("bad", opts{cn: "bad"})
	crl := filepath.Join(t.TempDir(), "crl.pem")
	c.crl(crl, badSerial)
	srv, err := (&Info{CertFile: cert, KeyFile: key, TrustedCAFile: c.file, CRLFile: crl}).ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	if se, ce, _ := handshake(t, srv, c.clientCfg(good, goodKey)); se != nil || ce != nil {
		t.Errorf("good client: server %v, client %v", se, ce)
	}
	se, _, _ := handshake(t, srv, c.clientCfg(bad, badKey))
	if se == nil || !strings.Contains(se.Error(), "revoked") {
		t.Errorf("revoked client: server err %v", se)
	}
	// A new CRL is read on the next handshake.
	c.crl(crl)
	if se, ce, _ := handshake(t, srv, c.clientCfg(bad, badKey)); se != nil || ce != nil {
		t.Errorf("after un-revoking: server %v, client %v", se, ce)
	}
	// An unreadable CRL keeps the last one.
	if err := os.WriteFile(crl, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if se, ce, _ := handshake(t, srv, c.clientCfg(bad, badKey)); se != nil || ce != nil {
		t.Errorf("after a bad CRL: server %v, client %v", se, ce)
	}
}

func TestCertificateReload(t *testing.T) {
	c := newCA(t)
	cert, key, first := c.issue("srv", opts{cn: "srv", ips: []string{"127.0.0.1"}})
	srv, err := (&Info{CertFile: cert, KeyFile: key}).ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	serial := func() string {
		t.Helper()
		se, ce, st := handshake(t, srv, c.clientCfg("", ""))
		if se != nil || ce != nil {
			t.Fatalf("server %v, client %v", se, ce)
		}
		return st.PeerCertificates[0].SerialNumber.String()
	}
	if got := serial(); got != first.String() {
		t.Fatalf("serial %s, want %s", got, first)
	}
	_, _, second := c.issue("srv", opts{cn: "srv", ips: []string{"127.0.0.1"}})
	if got := serial(); got != second.String() {
		t.Fatalf("after rotation: serial %s, want %s", got, second)
	}
	// A rotation half done (the certificate of another key) keeps the
	// loaded pair.
	otherCert, _, _ := c.issue("other", opts{cn: "other", ips: []string{"127.0.0.1"}})
	b, err := os.ReadFile(otherCert)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cert, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != second.String() {
		t.Fatalf("after a mismatched rewrite: serial %s, want %s", got, second)
	}
}

func TestClientConfigReloadsClientCertificate(t *testing.T) {
	c := newCA(t)
	cert, key, _ := c.issue("srv", opts{cn: "srv", ips: []string{"127.0.0.1"}})
	cliCert, cliKey, first := c.issue("cli", opts{cn: "peer"})
	var seen []string
	srvInfo := &Info{CertFile: cert, KeyFile: key, TrustedCAFile: c.file, ClientCertAuth: true}
	srv, err := srvInfo.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	srv.VerifyPeerCertificate = func(_ [][]byte, chains [][]*x509.Certificate) error {
		seen = append(seen, chains[0][0].SerialNumber.String())
		return nil
	}
	// ClientCertFile wins over CertFile when dialing.
	cli, err := (&Info{CertFile: cert, KeyFile: key, ClientCertFile: cliCert, ClientKeyFile: cliKey, TrustedCAFile: c.file}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cli.ServerName = "127.0.0.1"
	if se, ce, _ := handshake(t, srv, cli); se != nil || ce != nil {
		t.Fatalf("server %v, client %v", se, ce)
	}
	_, _, second := c.issue("cli", opts{cn: "peer"})
	if se, ce, _ := handshake(t, srv, cli); se != nil || ce != nil {
		t.Fatalf("server %v, client %v", se, ce)
	}
	if want := []string{first.String(), second.String()}; !reflect.DeepEqual(seen, want) {
		t.Errorf("client serials seen %v, want %v", seen, want)
	}
}

func TestSelfCert(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fixtures", "peer")
	if _, err := SelfCert(nil, dir, []string{"127.0.0.1:2380"}, 0); err == nil {
		t.Error("validity 0 accepted")
	}
	info, err := SelfCert(nil, dir, []string{"127.0.0.1:2380", "localhost:2380"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if info.CertFile != filepath.Join(dir, "cert.pem") || info.KeyFile != filepath.Join(dir, "key.pem") || !info.SelfSigned {
		t.Fatalf("info = %+v", info)
	}
	kp, err := loadKeyPair(info.CertFile, info.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf := kp.Leaf
	if len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal([]byte{127, 0, 0, 1}) || len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "localhost" {
		t.Errorf("SANs %v %v", leaf.IPAddresses, leaf.DNSNames)
	}
	if d := leaf.NotAfter.Sub(leaf.NotBefore); d != 2*365*24*time.Hour {
		t.Errorf("validity %v", d)
	}
	before, _ := os.ReadFile(info.CertFile)
	if _, err := SelfCert(nil, dir, []string{"127.0.0.1:2380"}, 2); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(info.CertFile); string(after) != string(before) {
		t.Error("existing self-signed certificate was regenerated")
	}
	srv, err := info.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := info.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if se, ce, _ := handshake(t, srv, cli); se != nil || ce != nil {
		t.Errorf("self-signed handshake: server %v, client %v", se, ce)
	}
}

func TestExpiryAtStartOnly(t *testing.T) {
	c := newCA(t)
	cert, key, _ := c.issue("srv", opts{cn: "srv", ips: []string{"127.0.0.1"}, notAfter: time.Now().Add(time.Hour)})
	srv, err := (&Info{CertFile: cert, KeyFile: key}).ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	// Once running, an expired certificate is still served (clients see
	// the expiry), and only a warning is logged.
	defer func(f func() time.Time) { now = f }(now)
	now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	cli := c.clientCfg("", "")
	cli.Time = now
	if _, ce, _ := handshake(t, srv, cli); ce == nil || !strings.Contains(ce.Error(), "expired") {
		t.Errorf("client err %v, want an expired certificate", ce)
	}
	if _, err := (&Info{CertFile: cert, KeyFile: key}).ServerConfig(); err == nil || !strings.Contains(err.Error(), "expired at") {
		t.Errorf("start with an expired certificate: err %v", err)
	}
}
