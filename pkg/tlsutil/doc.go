// Package tlsutil turns etcd's transport security settings (certificate
// and key files, a trusted CA, client certificate authentication, a CRL,
// allowed common names or host names, cipher suites and TLS versions) into
// crypto/tls configurations for the client and peer listeners and for the
// peer transport's outgoing connections.
//
// Certificates are read from their files when the configuration is built,
// so that a missing file, a key that does not match its certificate or an
// expired certificate stops the member at start. They are then read again
// whenever the files change (their size or modification time), so that
// certificates can be rotated without a restart: new handshakes use the new
// certificate, connections already open keep theirs.
//
// SelfCert generates the self-signed certificates of --auto-tls and
// --peer-auto-tls.
package tlsutil
