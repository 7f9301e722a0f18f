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
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Info{}, fmt.Errorf("cannot create cert directory: %w", err)
	}
	certPath, err := filepath.Abs(filepath.Join(dir, "cert.pem"))
	if err != nil {
		return Info{}, err
	}
	keyPath, err := filepath.Abs(filepath.Join(dir, "key.pem"))
	if err != nil {
		return Info{}, err
	}
	info := Info{CertFile: certPath, KeyFile: keyPath, SelfSigned: true, Logger: lg}
	_, cerr := os.Stat(certPath)
	_, kerr := os.Stat(keyPath)
	if cerr == nil && kerr == nil {
		return info, nil
	}

	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return Info{}, err
	}
	notBefore := now()
	tmpl := x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"etcd"}},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(time.Duration(validityYears) * 365 * 24 * time.Hour),
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
	lg.Warn("automatically generate certificates", zap.Time("certificate-validity-bound-not-after", tmpl.NotAfter))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Info{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, &key.PublicKey, key)
	if err != nil {
		return Info{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Info{}, err
	}
	// The key first: a cert.pem without its key.pem is never left behind
	// looking complete.
	if err := writePEM(keyPath, "EC PRIVATE KEY", keyDER, 0o600); err != nil {
		return Info{}, err
	}
	lg.Info("created key file", zap.String("path", keyPath))
	if err := writePEM(certPath, "CERTIFICATE", der, 0o644); err != nil {
		return Info{}, err
	}
	lg.Info("created cert file", zap.String("path", certPath))
	return info, nil
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
