package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
)

// SelfCert returns settings using the self-signed certificate and key in
// dir (cert.pem, key.pem), generating them first if either file is
// missing. The certificate is valid for validityYears years and for the
// given hosts ("host:port" or bare hosts; IPs become IP SANs, names DNS
// SANs). This is --auto-tls and --peer-auto-tls, with etcd's file layout:
// <data-dir>/fixtures/client and <data-dir>/fixtures/peer.
func SelfCert(lg *zap.Logger, dir string, hosts []string, validityYears uint) (Info, error) {
	if lg == nil {
		lg = zap.NewNop()
	}
	if validityYears == 0 {
		return Info{}, errors.New("selfSignedCertValidity is invalid,it should be greater than 0")
	}
	info, err := selfCertPaths(dir)
	if err != nil {
		return Info{}, err
	}
	info.Logger = lg
	if bothExist(info.CertFile, info.KeyFile) {
		return info, nil
	}
	tmpl, err := selfCertTemplate(hosts, validityYears)
	if err != nil {
		return Info{}, err
	}
	lg.Warn("automatically generate certificates", zap.Time("certificate-validity-bound-not-after", tmpl.NotAfter))
	certDER, keyDER, err := signSelf(tmpl)
	if err != nil {
		return Info{}, err
	}
	// The key first: a cert.pem without its key.pem is never left behind
	// looking complete.
	if err := writePEM(info.KeyFile, "EC PRIVATE KEY", keyDER, 0o600); err != nil {
		return Info{}, err
	}
	lg.Info("created key file", zap.String("path", info.KeyFile))
	if err := writePEM(info.CertFile, "CERTIFICATE", certDER, 0o644); err != nil {
		return Info{}, err
	}
	lg.Info("created cert file", zap.String("path", info.CertFile))
	return info, nil
}

// selfCertPaths creates dir and names its cert.pem and key.pem absolutely.
func selfCertPaths(dir string) (Info, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Info{}, fmt.Errorf("cannot create cert directory: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Info{}, err
	}
	return Info{CertFile: filepath.Join(abs, "cert.pem"), KeyFile: filepath.Join(abs, "key.pem"), SelfSigned: true}, nil
}

func bothExist(paths ...string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

// selfCertTemplate describes a certificate for servers and clients, valid
// from now for the given years, naming hosts as IP or DNS SANs (a port is
// dropped).
func selfCertTemplate(hosts []string, validityYears uint) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	start := now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"etcd"}},
		NotBefore:             start,
		NotAfter:              start.Add(time.Duration(validityYears) * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return tmpl, nil
}

// signSelf makes a P-256 key and the certificate tmpl describes, signed by
// that key; both in DER.
func signSelf(tmpl *x509.Certificate) (certDER, keyDER []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if certDER, err = x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key); err != nil {
		return nil, nil, err
	}
	if keyDER, err = x509.MarshalECPrivateKey(key); err != nil {
		return nil, nil, err
	}
	return certDER, keyDER, nil
}

// writePEM writes one PEM block to path through a temporary file.
func writePEM(path, typ string, der []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if err := pem.Encode(f, &pem.Block{Type: typ, Bytes: der}); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
