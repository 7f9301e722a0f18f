package discovery

import (
	"context"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/config"
	"github.com/cairnkv/cairn/server/membership"
)

// Enabled reports whether cfg bootstraps through v3 discovery
// (--discovery-token and --discovery-endpoints are both set).
func Enabled(cfg *config.Config) bool {
	dc := cfg.DiscoveryCfg
	return dc.Token != "" && len(dc.Client.Endpoints) > 0
}

// FromConfig is the discovery client configuration of cfg's
// --discovery-* flags.
func FromConfig(cfg *config.Config) Config {
	dc := cfg.DiscoveryCfg
	return Config{
		Token:              dc.Token,
		Endpoints:          dc.Client.Endpoints,
		DialTimeout:        dc.Client.DialTimeout,
		RequestTimeout:     dc.Client.RequestTimeout,
		KeepAliveTime:      dc.Client.KeepAliveTime,
		KeepAliveTimeout:   dc.Client.KeepAliveTimeout,
		InsecureTransport:  dc.Client.Secure.InsecureTransport,
		InsecureSkipVerify: dc.Client.Secure.InsecureSkipVerify,
		CertFile:           dc.Client.Secure.Cert,
		KeyFile:            dc.Client.Secure.Key,
		CACertFile:         dc.Client.Secure.Cacert,
		Username:           dc.Client.Auth.Username,
		Password:           dc.Client.Auth.Password,
	}
}

// SelfEntry is the member's registration value, "name=peerURL,...", and
// its member ID, computed as the bootstrap computes it from the initial
// cluster: from the advertised peer URLs and --initial-cluster-token.
func SelfEntry(cfg *config.Config) (string, uint64) {
	urls := make([]string, len(cfg.AdvertisePeerUrls))
	for i, u := range cfg.AdvertisePeerUrls {
		urls[i] = u.String()
	}
	token := cfg.InitialClusterToken
	if token == "" {
		token = "etcd-cluster" // etcdserver's default
	}
	return cfg.InitialClusterFromName(cfg.Name), membership.ComputeMemberID(urls, token, nil)
}

// Bootstrap runs discovery for cfg and returns the discovered initial
// cluster, in --initial-cluster form.
func Bootstrap(ctx context.Context, lg *zap.Logger, cfg *config.Config) (string, error) {
	self, id := SelfEntry(cfg)
	return JoinCluster(ctx, lg, FromConfig(cfg), id, self)
}
