package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// stamp identifies one version of a file: a rotation changes its size or
// modification time.
type stamp struct {
	size int64
	mod  time.Time
}

func statFile(path string) (stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, err
	}
	return stamp{size: fi.Size(), mod: fi.ModTime()}, nil
}

// now is time.Now; tests move it.
var now = time.Now

// loadKeyPair reads a certificate and its key and checks that the key
// matches and that the certificate has not expired.
func loadKeyPair(certFile, keyFile string) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("cannot load TLS certificate %s with key %s: %w", certFile, keyFile, err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("cannot parse TLS certificate %s: %w", certFile, err)
		}
		cert.Leaf = leaf
	}
	if t := now(); t.After(leaf.NotAfter) {
		return nil, fmt.Errorf("TLS certificate %s expired at %s (current time %s)",
			certFile, leaf.NotAfter.UTC().Format(time.RFC3339), t.UTC().Format(time.RFC3339))
	}
	return &cert, nil
}

// keyPair is a certificate and key read from files, read again when either
// file changes. A version that cannot be used (half written, mismatched,
// expired) is logged and the last good one is kept, so a rotation that
// writes the two files one after the other does not fail handshakes.
type keyPair struct {
	certFile, keyFile string
	lg                *zap.Logger

	mu     sync.Mutex
	stamps [2]stamp
	cert   *tls.Certificate
	bad    [2]stamp // the version last rejected, so it is logged once
}

// newKeyPair reads the pair once and fails if it cannot be used.
func newKeyPair(certFile, keyFile string, lg *zap.Logger) (*keyPair, error) {
	kp := &keyPair{certFile: certFile, keyFile: keyFile, lg: lg}
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	return kp, nil
}

func (kp *keyPair) get() (*tls.Certificate, error) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	cs, cerr := statFile(kp.certFile)
	ks, kerr := statFile(kp.keyFile)
	if err := errors.Join(cerr, kerr); err != nil {
		if kp.cert == nil {
			return nil, fmt.Errorf("cannot load TLS certificate %s with key %s: %w", kp.certFile, kp.keyFile, err)
		}
		kp.lg.Warn("cannot read TLS certificate files; keeping the loaded certificate",
			zap.String("cert-file", kp.certFile), zap.String("key-file", kp.keyFile), zap.Error(err))
		return kp.cert, nil
	}
	cur := [2]stamp{cs, ks}
	if kp.cert != nil && cur == kp.stamps {
		if kp.cert.Leaf != nil && now().After(kp.cert.Leaf.NotAfter) && kp.bad != cur {
			kp.bad = cur
			kp.lg.Warn("TLS certificate has expired", zap.String("cert-file", kp.certFile),
				zap.Time("not-after", kp.cert.Leaf.NotAfter))
		}
		return kp.cert, nil
	}
	cert, err := loadKeyPair(kp.certFile, kp.keyFile)
	if err != nil {
		if kp.cert == nil {
			return nil, err
		}
		if kp.bad != cur {
			kp.bad = cur
			kp.lg.Warn("cannot reload TLS certificate; keeping the loaded certificate", zap.Error(err))
		}
		return kp.cert, nil
	}
	if kp.cert != nil {
		kp.lg.Info("reloaded TLS certificate", zap.String("cert-file", kp.certFile),
			zap.String("key-file", kp.keyFile), zap.Time("not-after", cert.Leaf.NotAfter))
	}
	kp.cert, kp.stamps = cert, cur
	return cert, nil
}

// loadCertPool reads the PEM certificates of a trusted CA file.
func loadCertPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read trusted CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("trusted CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// crlFile is a certificate revocation list read from a file, read again
// when the file changes. It accepts PEM or DER.
type crlFile struct {
	path string
	lg   *zap.Logger

	mu      sync.Mutex
	stamp   stamp
	revoked map[string]bool // serial numbers, as big-endian bytes
	loaded  bool
}

func newCRLFile(path string, lg *zap.Logger) (*crlFile, error) {
	c := &crlFile{path: path, lg: lg}
	if _, err := c.serials(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *crlFile) serials() (map[string]bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := statFile(c.path)
	if err == nil && c.loaded && st == c.stamp {
		return c.revoked, nil
	}
	revoked, err := readCRL(c.path)
	if err != nil {
		if !c.loaded {
			return nil, err
		}
		c.lg.Warn("cannot reload certificate revocation list; keeping the loaded one", zap.Error(err))
		return c.revoked, nil
	}
	c.revoked, c.stamp, c.loaded = revoked, st, true
	return revoked, nil
}

func readCRL(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read CRL file: %w", err)
	}
	list, err := x509.ParseRevocationList(pemOrDER(b, "X509 CRL"))
	if err != nil {
		return nil, fmt.Errorf("cannot parse CRL file %s: %w", path, err)
	}
	revoked := make(map[string]bool, len(list.RevokedCertificateEntries))
	for _, e := range list.RevokedCertificateEntries {
		revoked[string(e.SerialNumber.Bytes())] = true
	}
	return revoked, nil
}

// check fails if any of certs is revoked.
func (c *crlFile) check(certs []*x509.Certificate) error {
	revoked, err := c.serials()
	if err != nil {
		return err
	}
	for _, cert := range certs {
		if revoked[string(cert.SerialNumber.Bytes())] {
			return fmt.Errorf("transport: certificate serial %x revoked", cert.SerialNumber.Bytes())
		}
	}
	return nil
}
