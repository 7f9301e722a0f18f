package embed

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/tlsutil"
	"github.com/cairnkv/cairn/server/config"
)

// transportSecurity is the TLS of a member's listeners and of its
// connections to other members, built once at start so that a bad
// certificate, key, CA or CRL file stops the member before it serves.
type transportSecurity struct {
	client     *tls.Config // https:// and unixs:// client URLs; nil without certificates
	peer       *tls.Config // https:// peer URLs; nil without certificates
	peerClient *tls.Config // dialing https:// peer URLs; nil without peer TLS settings
	clientDial *tls.Config // the dashboard dialing other members' https:// client URLs
}

// buildTLS resolves --auto-tls / --peer-auto-tls, checks the listen URLs
// against the certificates given, and builds the TLS configurations.
func buildTLS(cfg *config.Config, lg *zap.Logger) (*transportSecurity, error) {
	clientInfo, peerInfo, err := tlsInfos(cfg, lg)
	if err != nil {
		return nil, err
	}
	clientURLs := append(append([]url.URL{}, cfg.ListenClientUrls...), cfg.ListenClientHttpUrls...)
	if clientInfo, err = withAutoTLS(cfg, lg, clientInfo, cfg.ClientAutoTLS, "client", clientURLs); err != nil {
		return nil, err
	}
	if peerInfo, err = withAutoTLS(cfg, lg, peerInfo, cfg.PeerAutoTLS, "peer", cfg.ListenPeerUrls); err != nil {
		return nil, err
	}
	if err := checkURLSecurity(lg, clientURLs, clientInfo, clientURLMessages); err != nil {
		return nil, err
	}
	if err := checkURLSecurity(lg, cfg.ListenPeerUrls, peerInfo, peerURLMessages); err != nil {
		return nil, err
	}
	return tlsConfigs(cfg, lg, clientInfo, peerInfo)
}

// tlsInfos are the client and peer TLS settings of cfg's flags.
func tlsInfos(cfg *config.Config, lg *zap.Logger) (client, peer tlsutil.Info, err error) {
	suites, err := tlsutil.CipherSuites(cfg.CipherSuites)
	if err != nil {
		return client, peer, err
	}
	minV, err := tlsutil.Version(cfg.TlsMinVersion)
	if err != nil {
		return client, peer, err
	}
	maxV, err := tlsutil.Version(cfg.TlsMaxVersion)
	if err != nil {
		return client, peer, err
	}
	common := func(ti config.TLSInfo) tlsutil.Info {
		return tlsutil.Info{
			CertFile: ti.CertFile, KeyFile: ti.KeyFile,
			ClientCertFile: ti.ClientCertFile, ClientKeyFile: ti.ClientKeyFile,
			TrustedCAFile: ti.TrustedCAFile, ClientCertAuth: ti.ClientCertAuth, CRLFile: ti.CRLFile,
			AllowedCNs: ti.AllowedCNs, AllowedHostnames: ti.AllowedHostnames,
			CipherSuites: suites, MinVersion: minV, MaxVersion: maxV, Logger: lg,
		}
	}
	client, peer = common(cfg.ClientTLSInfo), common(cfg.PeerTLSInfo)
	peer.CheckClientSAN = !cfg.PeerTLSInfo.SkipClientSANVerify
	return client, peer, nil
}

// withAutoTLS replaces empty settings by a self-signed certificate for the
// hosts of urls when --auto-tls (or --peer-auto-tls) asks for one; given
// certificates win, with etcd's warning.
func withAutoTLS(cfg *config.Config, lg *zap.Logger, info tlsutil.Info, auto bool, side string, urls []url.URL) (tlsutil.Info, error) {
	if !auto {
		return info, nil
	}
	if !info.Empty() {
		lg.Warn("ignoring " + side + " auto TLS since certs given")
		return info, nil
	}
	var hosts []string
	for _, u := range urls {
		hosts = append(hosts, u.Host)
	}
	out, err := autoTLS(lg, info, filepath.Join(cfg.Dir, "fixtures", side), hosts, cfg.SelfSignedCertValidity)
	if err != nil {
		return info, fmt.Errorf("failed to get %s self-signed certs: %w", side, err)
	}
	return out, nil
}

// urlMessages are etcd's texts about a listen URL whose scheme and TLS
// settings disagree, for client or for peer URLs.
type urlMessages struct {
	missingCert func(u url.URL) error
	ignoredCert string
	ignoredAuth string
	urlField    string
}

var (
	clientURLMessages = urlMessages{
		missingCert: func(u url.URL) error {
			return fmt.Errorf("TLS key/cert (--cert-file, --key-file) must be provided for client url %s with HTTPS scheme", u.String())
		},
		ignoredCert: "scheme is http or unix while key and cert files are present; ignoring key and cert files",
		ignoredAuth: "scheme is http or unix while --client-cert-auth is enabled; ignoring client cert auth for this URL",
		urlField:    "client-url",
	}
	peerURLMessages = urlMessages{
		missingCert: func(u url.URL) error {
			return fmt.Errorf("cannot listen on TLS for %s: KeyFile and CertFile are not presented", u.Host)
		},
		ignoredCert: "scheme is HTTP while key and cert files are present; ignoring key and cert files",
		ignoredAuth: "scheme is HTTP while --peer-client-cert-auth is enabled; ignoring client cert auth for this URL",
		urlField:    "peer-url",
	}
)

// checkURLSecurity refuses a TLS URL without certificates and warns about
// certificates or client-certificate auth on a plaintext URL, as etcd does.
func checkURLSecurity(lg *zap.Logger, urls []url.URL, info tlsutil.Info, msg urlMessages) error {
	for _, u := range urls {
		switch {
		case isSecure(u) && info.Empty():
			return msg.missingCert(u)
		case !isSecure(u) && !info.Empty():
			lg.Warn(msg.ignoredCert, zap.String(msg.urlField, u.String()))
		}
		if !isSecure(u) && info.ClientCertAuth {
			lg.Warn(msg.ignoredAuth, zap.String(msg.urlField, u.String()))
		}
	}
	return nil
}

// tlsConfigs builds the TLS configurations the member needs from the
// settings: serving clients and peers, dialing peers, and (for the
// dashboard) dialing other members' client URLs.
func tlsConfigs(cfg *config.Config, lg *zap.Logger, clientInfo, peerInfo tlsutil.Info) (*transportSecurity, error) {
	ts := &transportSecurity{}
	var err error
	if !clientInfo.Empty() {
		lg.Info("starting with client TLS", tlsFields(clientInfo, cfg)...)
		if ts.client, err = clientInfo.ServerConfig(); err != nil {
			return nil, fmt.Errorf("client TLS: %w", err)
		}
	}
	if !peerInfo.Empty() {
		lg.Info("starting with peer TLS", tlsFields(peerInfo, cfg)...)
		if ts.peer, err = peerInfo.ServerConfig(); err != nil {
			return nil, fmt.Errorf("peer TLS: %w", err)
		}
	}
	if !peerInfo.Empty() || peerInfo.TrustedCAFile != "" {
		if ts.peerClient, err = peerInfo.ClientConfig(); err != nil {
			return nil, fmt.Errorf("peer TLS: %w", err)
		}
	}
	if cfg.Dashboard && (!clientInfo.Empty() || clientInfo.TrustedCAFile != "") {
		if ts.clientDial, err = clientInfo.ClientConfig(); err != nil {
			return nil, fmt.Errorf("client TLS: %w", err)
		}
	}
	return ts, nil
}

func autoTLS(lg *zap.Logger, info tlsutil.Info, dir string, hosts []string, years uint) (tlsutil.Info, error) {
	self, err := tlsutil.SelfCert(lg, dir, hosts, years)
	if err != nil {
		return info, err
	}
	info.CertFile, info.KeyFile = self.CertFile, self.KeyFile
	info.ClientCertFile, info.ClientKeyFile = "", ""
	info.SelfSigned = true
	return info, nil
}

func tlsFields(info tlsutil.Info, cfg *config.Config) []zap.Field {
	return []zap.Field{
		zap.String("cert-file", info.CertFile), zap.String("key-file", info.KeyFile),
		zap.String("client-cert-file", info.ClientCertFile), zap.String("client-key-file", info.ClientKeyFile),
		zap.String("trusted-ca-file", info.TrustedCAFile), zap.Bool("client-cert-auth", info.ClientCertAuth),
		zap.String("crl-file", info.CRLFile), zap.Bool("self-signed", info.SelfSigned),
		zap.Strings("allowed-cn", info.AllowedCNs), zap.Strings("allowed-hostname", info.AllowedHostnames),
		zap.Strings("cipher-suites", cfg.CipherSuites),
	}
}

func isSecure(u url.URL) bool { return u.Scheme == "https" || u.Scheme == "unixs" }

// listen binds u: http:// and https:// bind TCP with lc (which carries the
// socket options), unix:// and unixs:// a socket file. The secure schemes
// are wrapped in TLS with tlsCfg, so everything served on them (gRPC
// included) sees decrypted connections.
func listen(u url.URL, tlsCfg *tls.Config, lc *net.ListenConfig) (net.Listener, error) {
	switch u.Scheme {
	case "http", "https", "unix", "unixs":
	default:
		return nil, fmt.Errorf("cairn: %s URLs (%s) are not supported yet", u.Scheme, u.String())
	}
	network, addr := urlAddr(u)
	if isSecure(u) && tlsCfg == nil {
		return nil, fmt.Errorf("cannot listen on TLS for %s: KeyFile and CertFile are not presented", addr)
	}
	l, err := bind(network, addr, lc)
	if err != nil || !isSecure(u) {
		return l, err
	}
	return tls.NewListener(l, tlsCfg), nil
}

// bind listens on addr: TCP with lc, or a unix socket file, replacing a
// stale one left by an earlier run.
func bind(network, addr string, lc *net.ListenConfig) (net.Listener, error) {
	if network == "unix" {
		os.Remove(addr)
		return net.Listen("unix", addr)
	}
	return lc.Listen(context.Background(), "tcp", addr)
}

// logRejected wraps a TLS client listener so that a failed handshake (no
// or untrusted certificate, revoked, wrong CN) is logged as etcd does;
// the client mux would otherwise drop such connections silently.
func logRejected(l net.Listener, lg *zap.Logger) net.Listener {
	return &handshakeLogListener{Listener: l, lg: lg}
}

type handshakeLogListener struct {
	net.Listener
	lg *zap.Logger
}

func (l *handshakeLogListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*tls.Conn)
	if !ok {
		return c, nil
	}
	return &handshakeLogConn{Conn: tc, lg: l.lg}, nil
}

// handshakeLogConn handshakes on its first read or write (as tls.Conn
// would) and logs a failure.
type handshakeLogConn struct {
	*tls.Conn
	lg   *zap.Logger
	once sync.Once
}

func (c *handshakeLogConn) handshake() {
	c.once.Do(func() {
		if err := c.Conn.Handshake(); err != nil && !errors.Is(err, io.EOF) {
			c.lg.Warn("rejected connection on client endpoint",
				zap.String("remote-addr", c.RemoteAddr().String()), zap.Error(err))
		}
	})
}

func (c *handshakeLogConn) Read(b []byte) (int, error) {
	c.handshake()
	return c.Conn.Read(b)
}

func (c *handshakeLogConn) Write(b []byte) (int, error) {
	c.handshake()
	return c.Conn.Write(b)
}
