package config

import (
	"net/netip"

	"go.uber.org/zap"
)

// InferLocalAddr is the local address the member's connections to its
// peers are made from, as etcd's SetMemberLocalAddr feature gate chooses
// it: the first advertised peer URL whose host is an IP address that is
// neither loopback nor unspecified. "" (the gate is off, or no URL
// qualifies) lets the system choose.
func (c *Config) InferLocalAddr(lg *zap.Logger) string {
	if !c.FeatureEnabled("SetMemberLocalAddr") {
		return ""
	}
	if lg == nil {
		lg = zap.NewNop()
	}
	lg.Info("searching for a suitable member local address in AdvertisePeerURLs",
		zap.Strings("advertise-peer-urls", urlStrings(c.AdvertisePeerUrls)))
	for _, u := range c.AdvertisePeerUrls {
		addr, err := netip.ParseAddr(u.Hostname())
		if err != nil || addr.IsLoopback() || addr.IsUnspecified() {
			continue
		}
		lg.Info("setting member local address", zap.String("LocalAddr", addr.String()))
		return addr.String()
	}
	lg.Warn("unable to set a member local address due to lack of suitable local addresses",
		zap.Strings("advertise-peer-urls", urlStrings(c.AdvertisePeerUrls)))
	return ""
}
