package embed

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func mustURLs(t *testing.T, ss ...string) []url.URL {
	t.Helper()
	var out []url.URL
	for _, s := range ss {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *u)
	}
	return out
}

func TestGroupClientURLs(t *testing.T) {
	tests := []struct {
		name string
		urls []string
		want []string // network addr secure plain
	}{
		{"one each", []string{"http://a:1", "https://b:2"}, []string{"tcp a:1 false true", "tcp b:2 true false"}},
		{"http and https share a port", []string{"http://a:1", "https://a:1"}, []string{"tcp a:1 true true"}},
		{"repeated", []string{"http://a:1", "http://a:1"}, []string{"tcp a:1 false true"}},
		{"unix and unixs share a socket", []string{"unixs://s:1", "unix://s:1"}, []string{"unix s:1 true true"}},
		{"unix path", []string{"unix://s/p"}, []string{"unix s/p false true"}},
		{"tcp and unix are apart", []string{"http://a:1", "unix://a:1"}, []string{"tcp a:1 false true", "unix a:1 false true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, ca := range groupClientURLs(mustURLs(t, tt.urls...)) {
				got = append(got, strings.Join([]string{ca.network, ca.addr, boolStr(ca.secure), boolStr(ca.plain)}, " "))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestCheckClientHTTPURLs(t *testing.T) {
	if err := checkClientHTTPURLs(mustURLs(t, "http://a:1"), mustURLs(t, "https://a:2", "http://a:2")); err != nil {
		t.Fatalf("separate ports refused: %v", err)
	}
	err := checkClientHTTPURLs(mustURLs(t, "http://a:1"), mustURLs(t, "https://a:1"))
	want := "cannot bind both --listen-client-urls and --listen-client-http-urls on the same url https://a:1"
	if err == nil || err.Error() != want {
		t.Fatalf("same address: %v, want %q", err, want)
	}
}

// TestEitherListener: one listener, one plaintext and one TLS client; each
// connection is served as what it opened with, and the TLS one reports
// its TLS state.
func TestEitherListener(t *testing.T) {
	serverCfg, clientCfg := selfSignedTLS(t)
	lc := &net.ListenConfig{}
	lns, err := listenClientURLs(mustURLs(t, "http://127.0.0.1:0", "https://127.0.0.1:0"), serverCfg, lc, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if len(lns) != 1 { // both URLs name the address 127.0.0.1:0
		t.Fatalf("%d listeners for one address", len(lns))
	}
	l := lns[0]
	defer l.Close()
	type seen struct {
		line  string
		isTLS bool
	}
	seenc := make(chan seen, 2)
	go func() {
		for range 2 {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 5)
				if _, err := io.ReadFull(c, b); err != nil {
					seenc <- seen{line: "error: " + err.Error()}
					return
				}
				c.Write([]byte("pong!"))
				st := c.(interface{ ConnectionState() tls.ConnectionState }).ConnectionState()
				seenc <- seen{line: string(b), isTLS: st.HandshakeComplete}
			}()
		}
	}()
	addr := l.Addr().String()
	plain, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	secure, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, clientCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer secure.Close()
	for _, c := range []net.Conn{plain, secure} {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("ping!")); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 5)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "pong!" {
			t.Fatalf("answer %q, %v", b, err)
		}
	}
	tlsSeen := 0
	for range 2 {
		s := <-seenc
		if s.line != "ping!" {
			t.Fatalf("server read %q", s.line)
		}
		if s.isTLS {
			tlsSeen++
		}
	}
	if tlsSeen != 1 {
		t.Fatalf("%d of 2 connections were TLS, want 1", tlsSeen)
	}
}

// selfSignedTLS is a server certificate for 127.0.0.1 and a client that
// trusts it.
func selfSignedTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool}
}
