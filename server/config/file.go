package config

import (
	"fmt"
	"net/url"
	"os"
	"reflect"
	"sort"
	"strings"

	"go.uber.org/zap"
	"sigs.k8s.io/yaml"
)

// securityConfig is one of the YAML "client-transport-security" and
// "peer-transport-security" objects.
type securityConfig struct {
	TLSInfo
	AutoTLS bool `json:"auto-tls"`
}

// fileConfig is the YAML layout: Config's own keys plus the keys whose
// YAML form differs from the field (URL lists as comma strings, TLS as
// nested objects, feature gates as one string).
type fileConfig struct {
	*Config
	ListenPeerURLs       string         `json:"listen-peer-urls"`
	ListenClientURLs     string         `json:"listen-client-urls"`
	ListenClientHTTPURLs string         `json:"listen-client-http-urls"`
	ListenMetricsURLs    string         `json:"listen-metrics-urls"`
	AdvertisePeerURLs    string         `json:"initial-advertise-peer-urls"`
	AdvertiseClientURLs  string         `json:"advertise-client-urls"`
	CORS                 string         `json:"cors"`
	HostWhitelist        string         `json:"host-whitelist"`
	ClientSecurity       securityConfig `json:"client-transport-security"`
	PeerSecurity         securityConfig `json:"peer-transport-security"`
	FeatureGates         string         `json:"feature-gates"`
}

// loadFile reads an etcd YAML configuration over etcd's defaults. Like
// etcd, durations are integers in nanoseconds (YAML has no duration type).
// It also returns the top-level keys present, for deprecation notices.
func loadFile(path string) (*Config, map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	c := NewConfig()
	fc := &fileConfig{Config: c}
	if err := yaml.Unmarshal(b, fc); err != nil {
		return nil, nil, err
	}
	var keys map[string]any
	if err := yaml.Unmarshal(b, &keys); err != nil {
		return nil, nil, err
	}
	explicit := make(map[string]bool, len(keys))
	for k := range keys {
		explicit[k] = true
	}
	if err := fc.applyFileOnlyKeys(); err != nil {
		return nil, nil, err
	}
	c.ConfigFile = path
	c.noteUnknownKeys(explicit)
	return c, explicit, nil
}

func (fc *fileConfig) applyFileOnlyKeys() error {
	c := fc.Config
	if fc.FeatureGates != "" {
		if err := parseFeatureGates(c.FeatureGates, fc.FeatureGates); err != nil {
			return err
		}
	}
	if err := fc.applyURLKeys(); err != nil {
		return err
	}
	if fc.CORS != "" {
		origins, err := corsOrigins(fc.CORS)
		if err != nil {
			return err
		}
		c.CORS = origins
	}
	if fc.HostWhitelist != "" {
		c.HostWhitelist = uniqueSorted(strings.Split(fc.HostWhitelist, ","))
	}
	defaultCluster := NewConfig().InitialCluster
	if (c.DNSCluster != "" || len(c.DiscoveryCfg.Client.Endpoints) > 0) && c.InitialCluster == defaultCluster {
		c.InitialCluster = ""
	}
	if c.ClusterState == "" {
		c.ClusterState = ClusterStateNew
	}
	// The security objects replace the TLS settings wholesale, as in etcd.
	c.ClientTLSInfo, c.ClientAutoTLS = fc.ClientSecurity.TLSInfo, fc.ClientSecurity.AutoTLS
	c.PeerTLSInfo, c.PeerAutoTLS = fc.PeerSecurity.TLSInfo, fc.PeerSecurity.AutoTLS
	if c.SelfSignedCertValidity == 0 {
		c.SelfSignedCertValidity = 1
	}
	return nil
}

// applyURLKeys parses the comma-separated URL keys. etcd reports these
// errors as "unexpected error setting up <key>: <err>".
func (fc *fileConfig) applyURLKeys() error {
	c := fc.Config
	for _, k := range []struct {
		key string
		val string
		dst *[]url.URL
	}{
		{"listen-peer-urls", fc.ListenPeerURLs, &c.ListenPeerUrls},
		{"listen-client-urls", fc.ListenClientURLs, &c.ListenClientUrls},
		{"listen-client-http-urls", fc.ListenClientHTTPURLs, &c.ListenClientHttpUrls},
		{"initial-advertise-peer-urls", fc.AdvertisePeerURLs, &c.AdvertisePeerUrls},
		{"advertise-client-urls", fc.AdvertiseClientURLs, &c.AdvertiseClientUrls},
		{"listen-metrics-urls", fc.ListenMetricsURLs, &c.ListenMetricsUrls},
	} {
		if k.val == "" {
			continue
		}
		us, err := parseURLs(strings.Split(k.val, ","))
		if err != nil {
			return fmt.Errorf("unexpected error setting up %s: %w", k.key, err)
		}
		*k.dst = us
	}
	return nil
}

// noteUnknownKeys warns about YAML keys etcd v3.7 does not know. etcd
// ignores them silently; cairn says so, because a typo otherwise goes
// unnoticed.
func (c *Config) noteUnknownKeys(present map[string]bool) {
	known := fileKeys()
	var unknown []string
	for k := range present {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		c.notice(zap.WarnLevel, "ignoring unknown configuration file key", zap.String("key", k))
	}
}

// fileKeys lists the top-level YAML keys, read from the json tags.
func fileKeys() map[string]bool {
	keys := map[string]bool{}
	addJSONKeys(reflect.TypeOf(fileConfig{}), keys)
	return keys
}

func addJSONKeys(t reflect.Type, keys map[string]bool) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			addJSONKeys(f.Type, keys)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
}
