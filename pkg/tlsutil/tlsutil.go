package tlsutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Info is one side's (client or peer) transport security settings, as
// etcd's flags give them.
type Info struct {
	CertFile string // the server certificate; also the client one unless ClientCertFile is set
	KeyFile  string
	// ClientCertFile and ClientKeyFile are presented when this member
	// dials (peers); CertFile and KeyFile otherwise.
	ClientCertFile string
	ClientKeyFile  string
	TrustedCAFile  string
	// ClientCertAuth requires and verifies client certificates. A trusted
	// CA file alone does too, as in etcd.
	ClientCertAuth bool
	CRLFile        string
	// AllowedCNs and AllowedHostnames restrict the certificates accepted
	// (from clients, and from servers when dialing) to these common names
	// or to those valid for one of these host names. They are exclusive.
	AllowedCNs       []string
	AllowedHostnames []string
	// CheckClientSAN makes a server require that a client certificate
	// with IP or DNS SANs be valid for the address the client connects
	// from (etcd does this on peer listeners unless
	// --peer-skip-client-san-verification).
	CheckClientSAN bool
	CipherSuites   []uint16
	MinVersion     uint16 // 0: TLS 1.2
	MaxVersion     uint16 // 0: Go's highest
	// SelfSigned marks certificates made by SelfCert: dialing skips the
	// verification of the server certificate.
	SelfSigned bool
	Logger     *zap.Logger
}

// Empty reports whether no certificate is configured.
func (info *Info) Empty() bool { return info.CertFile == "" && info.KeyFile == "" }

func (info *Info) logger() *zap.Logger {
	if info.Logger == nil {
		return zap.NewNop()
	}
	return info.Logger
}

// check validates the combination of settings (etcd's messages).
func (info *Info) check() error {
	if info.CertFile == "" || info.KeyFile == "" {
		return fmt.Errorf("KeyFile and CertFile must both be present[key: %v, cert: %v]", info.KeyFile, info.CertFile)
	}
	if (info.ClientKeyFile == "") != (info.ClientCertFile == "") {
		return fmt.Errorf("ClientKeyFile and ClientCertFile must both be present or both absent: key: %v, cert: %v]", info.ClientKeyFile, info.ClientCertFile)
	}
	if len(info.AllowedCNs) > 0 && len(info.AllowedHostnames) > 0 {
		return fmt.Errorf("AllowedCNs and AllowedHostnames are mutually exclusive (cns=%q, hostnames=%q)", info.AllowedCNs, info.AllowedHostnames)
	}
	if info.MaxVersion != 0 && info.MinVersion > info.MaxVersion {
		return errors.New("TLS min version is greater than max version")
	}
	return nil
}

// base is what server and client configurations share: versions, cipher
// suites, and the CN / host name restriction.
func (info *Info) base() *tls.Config {
	minV := info.MinVersion
	if minV == 0 {
		minV = tls.VersionTLS12
	}
	cfg := &tls.Config{MinVersion: minV, MaxVersion: info.MaxVersion}
	if len(info.CipherSuites) > 0 {
		cfg.CipherSuites = slices.Clone(info.CipherSuites)
	}
	return cfg
}

// allowed returns the check of AllowedCNs / AllowedHostnames on the other
// side's certificate, nil when neither is set.
func (info *Info) allowed() func(tls.ConnectionState) error {
	var ok func(*x509.Certificate) bool
	switch {
	case len(info.AllowedCNs) > 0:
		cns := slices.Clone(info.AllowedCNs)
		ok = func(c *x509.Certificate) bool { return slices.Contains(cns, c.Subject.CommonName) }
	case len(info.AllowedHostnames) > 0:
		hosts := slices.Clone(info.AllowedHostnames)
		ok = func(c *x509.Certificate) bool {
			return slices.ContainsFunc(hosts, func(h string) bool { return c.VerifyHostname(h) == nil })
		}
	default:
		return nil
	}
	return func(cs tls.ConnectionState) error {
		for _, chain := range cs.VerifiedChains {
			if len(chain) > 0 && ok(chain[0]) {
				return nil
			}
		}
		if len(cs.VerifiedChains) == 0 {
			if len(cs.PeerCertificates) == 0 {
				return nil // no certificate was asked for
			}
			if ok(cs.PeerCertificates[0]) { // unverified (self-signed peers)
				return nil
			}
		}
		return errors.New("client certificate authentication failed")
	}
}

// ServerConfig returns the configuration of a TLS listener. It reads the
// certificate, key, CA and CRL files now and fails if any is unusable.
// The certificate (and CRL) are read again when their files change.
func (info *Info) ServerConfig() (*tls.Config, error) {
	if err := info.check(); err != nil {
		return nil, err
	}
	lg := info.logger()
	kp, err := newKeyPair(info.CertFile, info.KeyFile, lg)
	if err != nil {
		return nil, err
	}
	if info.ClientCertFile != "" {
		// Not served, but etcd insists that it be usable too.
		if _, err := loadKeyPair(info.ClientCertFile, info.ClientKeyFile); err != nil {
			return nil, err
		}
	}
	cfg := info.base()
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.get() }
	// h2 for gRPC (whose clients insist on it), http/1.1 for the rest.
	cfg.NextProtos = []string{"h2", "http/1.1"}
	if info.TrustedCAFile != "" || info.ClientCertAuth {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if info.TrustedCAFile != "" {
		if cfg.ClientCAs, err = loadCertPool(info.TrustedCAFile); err != nil {
			return nil, err
		}
	}
	verify, err := info.clientChecks(lg)
	if err != nil {
		return nil, err
	}
	cfg.VerifyConnection = verify
	if info.CheckClientSAN {
		return withClientSANCheck(cfg, verify), nil
	}
	return cfg, nil
}

// clientChecks is the check of a client's certificate beyond the chain:
// allowed CNs or host names, and the CRL. nil when there is none.
func (info *Info) clientChecks(lg *zap.Logger) (func(tls.ConnectionState) error, error) {
	var checks []func(tls.ConnectionState) error
	if f := info.allowed(); f != nil {
		checks = append(checks, f)
	}
	if info.CRLFile != "" {
		crl, err := newCRLFile(info.CRLFile, lg)
		if err != nil {
			return nil, err
		}
		checks = append(checks, func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return nil
			}
			return crl.check(cs.PeerCertificates)
		})
	}
	if len(checks) == 0 {
		return nil, nil
	}
	return func(cs tls.ConnectionState) error {
		for _, f := range checks {
			if err := f(cs); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// withClientSANCheck makes base also check that a TCP client's certificate
// names the address it connects from (etcd's peer SAN check). The remote
// address is known only per connection, so each gets a configuration of its
// own; a unix socket's client has no address a SAN could name, and the
// socket file's permissions guard it.
func withClientSANCheck(base *tls.Config, verify func(tls.ConnectionState) error) *tls.Config {
	cfg := base.Clone()
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if hello.Conn.RemoteAddr().Network() != "tcp" {
			return base, nil
		}
		c := base.Clone()
		remote := hello.Conn.RemoteAddr().String()
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if verify != nil {
				if err := verify(cs); err != nil {
					return err
				}
			}
			if len(cs.PeerCertificates) == 0 {
				return nil
			}
			return checkCertSAN(hello.Context(), cs.PeerCertificates[0], remote)
		}
		return c, nil
	}
	return cfg
}

// ClientConfig returns the configuration for dialing TLS servers (other
// members). The client certificate is ClientCertFile if set, CertFile
// otherwise, read again when its files change.
func (info *Info) ClientConfig() (*tls.Config, error) {
	cfg := info.base()
	if !info.Empty() {
		if err := info.check(); err != nil {
			return nil, err
		}
		certFile, keyFile := info.CertFile, info.KeyFile
		if info.ClientCertFile != "" {
			certFile, keyFile = info.ClientCertFile, info.ClientKeyFile
		}
		kp, err := newKeyPair(certFile, keyFile, info.logger())
		if err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get() }
		if f := info.allowed(); f != nil {
			cfg.VerifyConnection = f
		}
	}
	if info.TrustedCAFile != "" {
		pool, err := loadCertPool(info.TrustedCAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	cfg.InsecureSkipVerify = info.SelfSigned
	return cfg, nil
}

// sanLookupTimeout bounds the DNS lookups of checkCertSAN.
const sanLookupTimeout = 5 * time.Second

// checkCertSAN requires a client certificate that names IP addresses or
// DNS names to be valid for the address it connects from: an IP SAN equal
// to it, or a DNS SAN that resolves to it (or that it resolves back to).
func checkCertSAN(ctx context.Context, cert *x509.Certificate, remoteAddr string) error {
	if len(cert.IPAddresses) == 0 && len(cert.DNSNames) == 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return err
	}
	var ipErr error
	if len(cert.IPAddresses) > 0 {
		if ipErr = cert.VerifyHostname(host); ipErr == nil {
			return nil
		}
		if len(cert.DNSNames) == 0 {
			return ipErr
		}
	}
	ctx, cancel := context.WithTimeout(ctx, sanLookupTimeout)
	defer cancel()
	ok, lerr := hostInDNS(ctx, host, cert.DNSNames)
	if ok {
		return nil
	}
	suffix := ""
	if lerr != nil {
		suffix = " (" + lerr.Error() + ")"
	}
	return fmt.Errorf("tls: %q does not match any of DNSNames %q%s", host, cert.DNSNames, suffix)
}

func hostInDNS(ctx context.Context, host string, dnsNames []string) (bool, error) {
	var lastErr error
	names, err := net.DefaultResolver.LookupAddr(ctx, host)
	if err != nil {
		lastErr = err
	}
	for _, n := range names {
		n = strings.TrimSuffix(n, ".")
		for _, d := range dnsNames {
			if n == d || (strings.HasPrefix(d, "*.") && strings.HasSuffix(n, d[1:])) {
				return true, nil
			}
		}
	}
	for _, d := range dnsNames {
		if strings.HasPrefix(d, "*.") {
			continue
		}
		addrs, err := net.DefaultResolver.LookupHost(ctx, d)
		if err != nil {
			lastErr = err
			continue
		}
		if slices.Contains(addrs, host) {
			return true, nil
		}
	}
	return false, lastErr
}
