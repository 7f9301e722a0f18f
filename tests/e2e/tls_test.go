package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/tests/compat/etcdtools"
	"github.com/cairnkv/cairn/tests/harness"
)

// testCA issues the certificates of the TLS tests.
type testCA struct {
	t      testing.TB
	dir    string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	file   string // the CA certificate, PEM
	serial atomic.Int64
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	ca := &testCA{t: t, dir: t.TempDir()}
	ca.serial.Store(100)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "cairn test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	ca.cert, err = x509.ParseCertificate(der)
	must(t, err)
	ca.key = key
	ca.file = filepath.Join(ca.dir, "ca.pem")
	writePEMFile(t, ca.file, "CERTIFICATE", der)
	return ca
}

type certOpts struct {
	cn       string
	ips      []string
	notAfter time.Time // default: a day from now
}

// issue writes a certificate (for server and client use) and its key as
// name.pem and name-key.pem and returns their paths and serial number.
func (ca *testCA) issue(name string, o certOpts) (certFile, keyFile string, serial *big.Int) {
	t := ca.t
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	if o.notAfter.IsZero() {
		o.notAfter = time.Now().Add(24 * time.Hour)
	}
	serial = big.NewInt(ca.serial.Add(1))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: o.cn},
		NotBefore:    time.Now().Add(-2 * time.Hour),
		NotAfter:     o.notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, ip := range o.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	must(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	must(t, err)
	certFile = filepath.Join(ca.dir, name+".pem")
	keyFile = filepath.Join(ca.dir, name+"-key.pem")
	writePEMFile(t, certFile, "CERTIFICATE", der)
	writePEMFile(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile, serial
}

// crl writes a revocation list of serials and returns its path.
func (ca *testCA) crl(name string, serials ...*big.Int) string {
	t := ca.t
	t.Helper()
	var entries []x509.RevocationListEntry
	for _, s := range serials {
		entries = append(entries, x509.RevocationListEntry{SerialNumber: s, RevocationTime: time.Now().Add(-time.Minute)})
	}
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: big.NewInt(1), ThisUpdate: time.Now().Add(-time.Hour), NextUpdate: time.Now().Add(time.Hour),
		RevokedCertificateEntries: entries,
	}, ca.cert, ca.key)
	must(t, err)
	path := filepath.Join(ca.dir, name)
	writePEMFile(t, path, "X509 CRL", der)
	return path
}

func writePEMFile(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	must(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

// clientCertAuthArgs issues a server certificate for 127.0.0.1 and returns
// the member flags of a client endpoint that serves it and requires client
// certificates signed by ca, followed by extra.
func (ca *testCA) clientCertAuthArgs(extra ...string) []string {
	srvCert, srvKey, _ := ca.issue("server", certOpts{cn: "server", ips: []string{"127.0.0.1"}})
	return append([]string{"--cert-file", srvCert, "--key-file", srvKey, "--trusted-ca-file", ca.file, "--client-cert-auth"}, extra...)
}

// clientTLS is a client configuration trusting ca, presenting the given
// certificate (none if certFile is empty).
func (ca *testCA) clientTLS(certFile, keyFile string) *tls.Config {
	ca.t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		must(ca.t, err)
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}

// tlsMemberOpts starts a single member whose client URL is https.
type tlsMemberOpts struct {
	clientScheme, peerScheme string // default https, http
	args                     []string
}

// newTLSMember prepares (without starting) a one-member cluster with the
// given schemes.
func newTLSMember(t testing.TB, o tlsMemberOpts) *member {
	t.Helper()
	if o.clientScheme == "" {
		o.clientScheme = "https"
	}
	if o.peerScheme == "" {
		o.peerScheme = "http"
	}
	dir := t.TempDir()
	m := &member{
		t:         t,
		name:      "m0",
		dataDir:   filepath.Join(dir, "m0.etcd"),
		clientURL: fmt.Sprintf("%s://127.0.0.1:%d", o.clientScheme, harness.FreePort(t)),
		peerURL:   fmt.Sprintf("%s://127.0.0.1:%d", o.peerScheme, harness.FreePort(t)),
		logPath:   filepath.Join(dir, "m0.log"),
	}
	m.args = append([]string{
		"--name", m.name, "--data-dir", m.dataDir,
		"--listen-client-urls", m.clientURL, "--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL, "--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", "m0=" + m.peerURL, "--initial-cluster-token", "e2e-tls",
	}, o.args...)
	t.Cleanup(func() {
		if m.running() {
			if err := gracefulExit(m.stop()); err != nil {
				t.Errorf("stopping member %s: %v", m.name, err)
			}
		}
		if t.Failed() {
			m.dumpLog()
		}
	})
	return m
}

func tlsClient(t testing.TB, endpoint string, cfg *tls.Config) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, TLS: cfg, Logger: zap.NewNop(),
	})
	must(t, err)
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestTLSClientCertAuth serves clients over https with
// --client-cert-auth: the official Go client with a certificate from the
// trusted CA gets in (gRPC over TLS with ALPN h2), as does HTTP/1.1 (health
// and the JSON gateway); a client without a certificate, a client with a
// certificate from another CA and a plaintext client do not.
func TestTLSClientCertAuth(t *testing.T) {
	ca := newTestCA(t)
	cliCert, cliKey, _ := ca.issue("client", certOpts{cn: "root"})
	m := newTLSMember(t, tlsMemberOpts{args: ca.clientCertAuthArgs()})
	m.start()

	cli := tlsClient(t, m.clientURL, ca.clientTLS(cliCert, cliKey))
	mustPut(t, cli, "k", "v")
	resp, err := cli.Get(ctx(t), "k")
	must(t, err)
	if got := kvPairs(resp.Kvs); got != "k=v" {
		t.Fatalf("Get = %s, want k=v", got)
	}

	t.Run("http1 with certificate", func(t *testing.T) {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.clientTLS(cliCert, cliKey)}, Timeout: 10 * time.Second}
		r, err := hc.Get(m.clientURL + "/health")
		must(t, err)
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusOK || !strings.Contains(string(body), `"health":"true"`) {
			t.Errorf("GET /health = %d %s", r.StatusCode, body)
		}
		if r.TLS == nil || r.ProtoMajor != 1 {
			t.Errorf("GET /health not HTTP/1.1 over TLS: proto %s, tls %v", r.Proto, r.TLS != nil)
		}
		r, err = hc.Post(m.clientURL+"/v3/kv/range", "application/json", strings.NewReader(`{"key":"aw=="}`)) // "k"
		must(t, err)
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusOK || !strings.Contains(string(body), `"value":"dg=="`) {
			t.Errorf("POST /v3/kv/range = %d %s", r.StatusCode, body)
		}
	})

	t.Run("etcdctl", func(t *testing.T) {
		ctl, err := etcdtools.Path("etcdctl")
		if err != nil {
			t.Skipf("etcdctl %s not available: %v", etcdtools.Version, err)
		}
		run := func(args ...string) (string, error) {
			cctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			defer cancel()
			out, err := exec.CommandContext(cctx, ctl, append([]string{"--endpoints", m.clientURL,
				"--cacert", ca.file, "--cert", cliCert, "--key", cliKey, "--dial-timeout", "3s", "--command-timeout", "3s"}, args...)...).CombinedOutput()
			return string(out), err
		}
		if out, err := run("put", "ctl", "over-tls"); err != nil || strings.TrimSpace(out) != "OK" {
			t.Fatalf("etcdctl put: %v\n%s", err, out)
		}
		if out, err := run("get", "ctl", "--print-value-only"); err != nil || strings.TrimSpace(out) != "over-tls" {
			t.Fatalf("etcdctl get: %v\n%s", err, out)
		}
		if out, err := run("endpoint", "health"); err != nil || !strings.Contains(out, "is healthy") {
			t.Fatalf("etcdctl endpoint health: %v\n%s", err, out)
		}
	})

	failing := func(t *testing.T, cfg *tls.Config) {
		t.Helper()
		c := tlsClient(t, m.clientURL, cfg)
		cctx, cancel := context.WithTimeout(context.Background(), failTimeout)
		defer cancel()
		if _, err := c.Get(cctx, "k"); err == nil {
			t.Fatal("Get succeeded, want a failure")
		}
	}
	t.Run("grpc without certificate", func(t *testing.T) { failing(t, ca.clientTLS("", "")) })
	t.Run("grpc with certificate of another CA", func(t *testing.T) {
		other := newTestCA(t)
		c, k, _ := other.issue("client", certOpts{cn: "root"})
		failing(t, ca.clientTLS(c, k))
	})
	t.Run("http1 without certificate", func(t *testing.T) {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.clientTLS("", "")}, Timeout: 10 * time.Second}
		if r, err := hc.Get(m.clientURL + "/health"); err == nil {
			r.Body.Close()
			t.Fatalf("GET /health without a client certificate = %d, want a TLS failure", r.StatusCode)
		}
	})
	t.Run("plaintext", func(t *testing.T) {
		hc := &http.Client{Timeout: 10 * time.Second}
		if r, err := hc.Get(strings.Replace(m.clientURL, "https://", "http://", 1) + "/health"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				t.Fatalf("plaintext GET /health on the https URL answered 200")
			}
		}
	})
}

// TestTLSServerOnly serves https without client certificates: a client
// trusting the CA connects without one; the peer URL stays plain http.
func TestTLSServerOnly(t *testing.T) {
	ca := newTestCA(t)
	srvCert, srvKey, _ := ca.issue("server", certOpts{cn: "server", ips: []string{"127.0.0.1"}})
	m := newTLSMember(t, tlsMemberOpts{args: []string{"--cert-file", srvCert, "--key-file", srvKey}})
	m.start()
	cli := tlsClient(t, m.clientURL, ca.clientTLS("", ""))
	mustPut(t, cli, "k", "v")
}

// TestTLSStartFailures: misconfigured TLS stops the member at start with a
// clear error; it never serves plaintext instead.
func TestTLSStartFailures(t *testing.T) {
	ca := newTestCA(t)
	srvCert, srvKey, _ := ca.issue("server", certOpts{cn: "server", ips: []string{"127.0.0.1"}})
	_, otherKey, _ := ca.issue("other", certOpts{cn: "other", ips: []string{"127.0.0.1"}})
	expCert, expKey, _ := ca.issue("expired", certOpts{cn: "server", ips: []string{"127.0.0.1"}, notAfter: time.Now().Add(-time.Hour)})
	missing := filepath.Join(t.TempDir(), "missing.pem")
	tests := []struct {
		name       string
		peerScheme string
		args       []string
		want       string
	}{
		{"https without certificate", "", nil, "TLS key/cert (--cert-file, --key-file) must be provided for client url"},
		{"missing certificate file", "", []string{"--cert-file", missing, "--key-file", srvKey}, "no such file or directory"},
		{"key of another certificate", "", []string{"--cert-file", srvCert, "--key-file", otherKey}, "private key does not match public key"},
		{"expired certificate", "", []string{"--cert-file", expCert, "--key-file", expKey}, "expired at"},
		{"missing CA file", "", []string{"--cert-file", srvCert, "--key-file", srvKey, "--trusted-ca-file", missing}, "cannot read trusted CA file"},
		{"missing CRL file", "", []string{"--cert-file", srvCert, "--key-file", srvKey, "--client-crl-file", missing}, "cannot read CRL file"},
		{"unknown cipher suite", "", []string{"--cert-file", srvCert, "--key-file", srvKey, "--cipher-suites", "TLS_NOPE"}, `unexpected TLS cipher suite "TLS_NOPE"`},
		{"https peer without certificate", "https", []string{"--cert-file", srvCert, "--key-file", srvKey}, "cannot listen on TLS for"},
		{"cn and hostname", "https", []string{"--cert-file", srvCert, "--key-file", srvKey, "--peer-cert-file", srvCert, "--peer-key-file", srvKey,
			"--peer-cert-allowed-cn", "a", "--peer-cert-allowed-hostname", "b"}, "AllowedCNs and AllowedHostnames are mutually exclusive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newTLSMember(t, tlsMemberOpts{peerScheme: tc.peerScheme, args: tc.args})
			cctx, cancel := context.WithTimeout(context.Background(), startTimeout)
			defer cancel()
			out, err := exec.CommandContext(cctx, cairnBin, m.args...).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("err = %v, want a non-zero exit; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output does not contain %q:\n%s", tc.want, out)
			}
			if strings.Contains(string(out), readyLine) {
				t.Errorf("member became ready:\n%s", out)
			}
		})
	}
}

// peerTLSArgs are the flags of a cluster whose members talk over https
// with certificates from ca, checked both ways.
func peerTLSArgs(ca *testCA, certFile, keyFile string, extra ...string) []string {
	return append([]string{
		"--peer-cert-file", certFile, "--peer-key-file", keyFile,
		"--peer-trusted-ca-file", ca.file, "--peer-client-cert-auth",
	}, extra...)
}

// TestTLSPeerCluster runs three members over https peer URLs with
// --peer-client-cert-auth and --peer-cert-allowed-cn: they elect a leader,
// replicate, and a member that was down catches up over TLS.
func TestTLSPeerCluster(t *testing.T) {
	ca := newTestCA(t)
	cert, key, _ := ca.issue("peer", certOpts{cn: "peer", ips: []string{"127.0.0.1"}})
	c := startCluster(t, clusterOpts{size: 3, peerScheme: "https",
		args: peerTLSArgs(ca, cert, key, "--peer-cert-allowed-cn", "peer")})
	for i, cli := range c.clients {
		mustPut(t, cli, fmt.Sprintf("k%d", i), fmt.Sprintf("via-m%d", i))
	}
	for i := range c.members {
		c.waitValue(t, i, "k2", "via-m2")
	}
	c.members[1].kill()
	c.waitLeader(c.except(1)...)
	for n := range 20 {
		mustPut(t, c.clients[0], fmt.Sprintf("while-down/%02d", n), fmt.Sprint(n))
	}
	c.members[1].restart()
	c.waitValue(t, 1, "while-down/19", "19")
	c.waitLeader(c.all()...)
	c.assertConsistent(t, c.all()...)
}

// TestTLSPeerClusterMixedWithEtcd runs two cairn members and a real etcd
// v3.7.3 member together over https peer URLs with mutual certificate
// checks.
func TestTLSPeerClusterMixedWithEtcd(t *testing.T) {
	const etcdIdx = 2
	ca := newTestCA(t)
	cert, key, _ := ca.issue("peer", certOpts{cn: "peer", ips: []string{"127.0.0.1"}})
	c := startCluster(t, clusterOpts{size: 3, peerScheme: "https", bins: map[int]string{etcdIdx: etcdBinary(t)},
		args: peerTLSArgs(ca, cert, key, "--peer-cert-allowed-cn", "peer")})
	for i, cli := range c.clients {
		mustPut(t, cli, fmt.Sprintf("k%d", i), fmt.Sprintf("via-m%d", i))
	}
	for i := range c.members {
		c.waitValue(t, i, "k0", "via-m0")
		c.waitValue(t, i, "k2", "via-m2")
	}
	c.members[etcdIdx].kill()
	c.waitLeader(c.except(etcdIdx)...)
	for n := range 20 {
		mustPut(t, c.clients[n%2], fmt.Sprintf("while-down/%02d", n), fmt.Sprint(n))
	}
	c.members[etcdIdx].restart()
	c.waitValue(t, etcdIdx, "while-down/19", "19")
	c.waitLeader(c.all()...)
	c.assertConsistent(t, c.all()...)
}

// TestTLSPeerAllowedCN: the peer listener accepts only certificates from
// the trusted CA whose CN is allowed.
func TestTLSPeerAllowedCN(t *testing.T) {
	ca := newTestCA(t)
	cert, key, _ := ca.issue("peer", certOpts{cn: "peer", ips: []string{"127.0.0.1"}})
	intruder, intruderKey, _ := ca.issue("intruder", certOpts{cn: "intruder", ips: []string{"127.0.0.1"}})
	m := newTLSMember(t, tlsMemberOpts{clientScheme: "http", peerScheme: "https",
		args: peerTLSArgs(ca, cert, key, "--peer-cert-allowed-cn", "peer")})
	m.start()
	get := func(certFile, keyFile string) (int, error) {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.clientTLS(certFile, keyFile)}, Timeout: 10 * time.Second}
		r, err := hc.Get(m.peerURL + "/members")
		if err != nil {
			return 0, err
		}
		r.Body.Close()
		return r.StatusCode, nil
	}
	if code, err := get(cert, key); err != nil || code != http.StatusOK {
		t.Errorf("GET /members as CN peer = %d, %v; want 200", code, err)
	}
	if code, err := get(intruder, intruderKey); err == nil {
		t.Errorf("GET /members as CN intruder = %d, want a TLS failure", code)
	}
	if code, err := get("", ""); err == nil {
		t.Errorf("GET /members without a certificate = %d, want a TLS failure", code)
	}
}

// TestTLSClientCRL: a client whose certificate is in --client-crl-file is
// refused.
func TestTLSClientCRL(t *testing.T) {
	ca := newTestCA(t)
	good, goodKey, _ := ca.issue("good", certOpts{cn: "good"})
	revoked, revokedKey, serial := ca.issue("revoked", certOpts{cn: "revoked"})
	m := newTLSMember(t, tlsMemberOpts{args: ca.clientCertAuthArgs("--client-crl-file", ca.crl("crl.pem", serial))})
	m.start()
	mustPut(t, tlsClient(t, m.clientURL, ca.clientTLS(good, goodKey)), "k", "v")
	cctx, cancel := context.WithTimeout(context.Background(), failTimeout)
	defer cancel()
	if _, err := tlsClient(t, m.clientURL, ca.clientTLS(revoked, revokedKey)).Get(cctx, "k"); err == nil {
		t.Error("revoked client certificate accepted")
	}
	logged, err := os.ReadFile(m.logPath)
	must(t, err)
	if !strings.Contains(string(logged), "rejected connection on client endpoint") || !strings.Contains(string(logged), "revoked") {
		t.Error("the rejected connection is not logged with its reason")
	}
}

// TestTLSAutoTLS: --auto-tls and --peer-auto-tls generate self-signed
// certificates under <data-dir>/fixtures and serve https with them.
func TestTLSAutoTLS(t *testing.T) {
	m := newTLSMember(t, tlsMemberOpts{peerScheme: "https", args: []string{"--auto-tls", "--peer-auto-tls", "--self-signed-cert-validity", "2"}})
	m.start()
	for _, side := range []string{"client", "peer"} {
		for _, f := range []string{"cert.pem", "key.pem"} {
			if _, err := os.Stat(filepath.Join(m.dataDir, "fixtures", side, f)); err != nil {
				t.Errorf("fixtures/%s/%s: %v", side, f, err)
			}
		}
	}
	cli := tlsClient(t, m.clientURL, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // self-signed by design
	mustPut(t, cli, "k", "v")
	b, err := os.ReadFile(filepath.Join(m.dataDir, "fixtures", "client", "cert.pem"))
	must(t, err)
	block, _ := pem.Decode(b)
	cert, err := x509.ParseCertificate(block.Bytes)
	must(t, err)
	if d := cert.NotAfter.Sub(cert.NotBefore); d != 2*365*24*time.Hour {
		t.Errorf("self-signed validity %v, want 2 years", d)
	}
	// A restart reuses the certificates.
	must(t, m.stop())
	m.restart()
	b2, err := os.ReadFile(filepath.Join(m.dataDir, "fixtures", "client", "cert.pem"))
	must(t, err)
	if string(b) != string(b2) {
		t.Error("restart regenerated the self-signed certificate")
	}
	mustPut(t, tlsClient(t, m.clientURL, &tls.Config{InsecureSkipVerify: true}), "k", "v2") //nolint:gosec // self-signed by design
}
