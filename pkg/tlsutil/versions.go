package tlsutil

import (
	"crypto/tls"
	"fmt"
)

// Version maps etcd's --tls-min-version / --tls-max-version value to a
// crypto/tls version; "" is 0, which lets Go choose.
func Version(name string) (uint16, error) {
	switch name {
	case "":
		return 0, nil
	case "TLS1.2":
		return tls.VersionTLS12, nil
	case "TLS1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("unexpected TLS version %q (must be one of: TLS1.2, TLS1.3)", name)
}

// legacyCipherNames are names etcd accepts besides Go's own: the
// ChaCha20-Poly1305 suites as Go named them before 1.16.
var legacyCipherNames = map[string]uint16{
	"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
}

// CipherSuite returns the ID of the named cipher suite. Like etcd, it
// knows every suite crypto/tls implements, the insecure ones included.
func CipherSuite(name string) (uint16, bool) {
	for _, list := range [][]*tls.CipherSuite{tls.CipherSuites(), tls.InsecureCipherSuites()} {
		for _, s := range list {
			if s.Name == name {
				return s.ID, true
			}
		}
	}
	id, ok := legacyCipherNames[name]
	return id, ok
}

// CipherSuites maps --cipher-suites names to IDs, in the given order.
func CipherSuites(names []string) ([]uint16, error) {
	if len(names) == 0 {
		return nil, nil
	}
	ids := make([]uint16, len(names))
	for i, n := range names {
		id, ok := CipherSuite(n)
		if !ok {
			return nil, fmt.Errorf("unexpected TLS cipher suite %q", n)
		}
		ids[i] = id
	}
	return ids, nil
}
