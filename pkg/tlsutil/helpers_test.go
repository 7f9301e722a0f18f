package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type ca struct {
	t      *testing.T
	dir    string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	file   string
	serial int64
}

func newCA(t *testing.T) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c := &ca{t: t, dir: t.TempDir(), key: key, serial: 100}
	if c.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	c.file = filepath.Join(c.dir, "ca.pem")
	writePEMTest(t, c.file, "CERTIFICATE", der)
	return c
}

type opts struct {
	cn       string
	ips      []string
	dns      []string
	notAfter time.Time
}

// issue writes name.pem and name-key.pem.
func (c *ca) issue(name string, o opts) (certFile, keyFile string, serial *big.Int) {
	c.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		c.t.Fatal(err)
	}
	if o.notAfter.IsZero() {
		o.notAfter = time.Now().Add(24 * time.Hour)
	}
	c.serial++
	serial = big.NewInt(c.serial)
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: o.cn},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: o.notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    o.dns,
	}
	for _, ip := range o.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		c.t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		c.t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(c.dir, name+".pem"), filepath.Join(c.dir, name+"-key.pem")
	writePEMTest(c.t, certFile, "CERTIFICATE", der)
	writePEMTest(c.t, keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile, serial
}

func (c *ca) crl(path string, serials ...*big.Int) {
	c.t.Helper()
	var entries []x509.RevocationListEntry
	for _, s := range serials {
		entries = append(entries, x509.RevocationListEntry{SerialNumber: s, RevocationTime: time.Now()})
	}
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: big.NewInt(time.Now().UnixNano()), ThisUpdate: time.Now(), NextUpdate: time.Now().Add(time.Hour),
		RevokedCertificateEntries: entries,
	}, c.cert, c.key)
	if err != nil {
		c.t.Fatal(err)
	}
	writePEMTest(c.t, path, "X509 CRL", der)
}

func writePEMTest(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// clientCfg trusts c and presents the given pair (none if empty).
func (c *ca) clientCfg(certFile, keyFile string) *tls.Config {
	c.t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(c.cert)
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			c.t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

// handshake connects a client with cli to a server with srv over loopback
// TCP and returns both sides' handshake errors and the client's view.
func handshake(t *testing.T, srv, cli *tls.Config) (serverErr, clientErr error, st tls.ConnectionState) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		tc := tls.Server(c, srv)
		err = tc.Handshake()
		if err == nil {
			// TLS 1.3: the client learns of a rejected certificate only
			// when it reads; answer one byte so that it does.
			_, err = tc.Write([]byte{1})
		}
		done <- err
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc := tls.Client(c, cli)
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	clientErr = tc.Handshake()
	if clientErr == nil {
		_, clientErr = io.ReadFull(tc, make([]byte, 1))
		st = tc.ConnectionState()
	}
	return <-done, clientErr, st
}
