package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/cairnkv/cairn/pkg/tlsutil"
	"github.com/cairnkv/cairn/server/compactor"
)

// Errors etcd names; callers may test for them with errors.Is.
var (
	ErrConflictBootstrapFlags = errors.New("multiple discovery or bootstrap flags are set. " +
		`Choose one of "initial-cluster", "discovery-endpoints" or "discovery-srv"`)
	ErrUnsetAdvertiseClientURLsFlag = errors.New("--advertise-client-urls is required when --listen-client-urls is set explicitly")
)

// Validate makes etcd's checks on a parsed configuration, with etcd's
// messages, in etcd's order. Checks that depend on the data directory
// (whether this is a bootstrap) are in VerifyBootstrap and
// VerifyJoinExisting.
func (c *Config) Validate() error {
	for _, check := range []func() error{
		c.validateLogging,
		c.validateURLs,
		c.validateBootstrapSource,
		c.validateTiming,
		c.validateMisc,
		c.validateTLSVersions,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) validateLogging() error {
	switch c.Logger {
	case "zap":
	case "capnslog":
		return errors.New("--logger=capnslog is removed in v3.5")
	default:
		return fmt.Errorf("unknown logger option %q", c.Logger)
	}
	if len(c.LogOutputs) > 1 && contains(c.LogOutputs, DefaultLogOutput) {
		return fmt.Errorf("multi logoutput for %q is not supported yet", DefaultLogOutput)
	}
	if c.EnableLogRotation {
		if _, err := c.LogRotation(); err != nil {
			return err
		}
	}
	switch c.LogFormat {
	case "", "json", "console":
	default:
		return fmt.Errorf("unknown log format: %s, supported values json, console", c.LogFormat)
	}
	var lvl zapcore.Level
	return lvl.Set(c.LogLevel)
}

func (c *Config) validateURLs() error {
	for _, us := range [][]url.URL{c.ListenPeerUrls, c.ListenClientUrls, c.ListenClientHttpUrls, c.ListenMetricsUrls} {
		if err := checkBindURLs(us); err != nil {
			return err
		}
	}
	if err := checkHostURLs(c.AdvertisePeerUrls); err != nil {
		return fmt.Errorf(`--initial-advertise-peer-urls %q must be "host:port" (%w)`,
			strings.Join(urlStrings(c.AdvertisePeerUrls), ","), err)
	}
	if err := checkHostURLs(c.AdvertiseClientUrls); err != nil {
		return fmt.Errorf(`--advertise-client-urls %q must be in the format "host:port", "unix:/path/to/socket" or "unixs:/path/to/socket" (%w)`,
			strings.Join(urlStrings(c.AdvertiseClientUrls), ","), err)
	}
	return nil
}

// checkBindURLs insists on IP addresses (or localhost) in listen URLs:
// binding to a name would depend on DNS at start-up.
func checkBindURLs(us []url.URL) error {
	return eachTCPHost(us, func(u url.URL, host string) error {
		if host != "localhost" && net.ParseIP(host) == nil {
			return fmt.Errorf("expected IP in URL for binding (%s)", u.String())
		}
		return nil
	})
}

// checkHostURLs insists on a host in advertised URLs.
func checkHostURLs(us []url.URL) error {
	return eachTCPHost(us, func(u url.URL, host string) error {
		if host == "" {
			return fmt.Errorf("unexpected empty host (%s)", u.String())
		}
		return nil
	})
}

// eachTCPHost runs check on the host of every URL but unix sockets' (whose
// "host" is a file name), failing first on a URL without host:port.
func eachTCPHost(us []url.URL, check func(u url.URL, host string) error) error {
	for _, u := range us {
		if u.Scheme == "unix" || u.Scheme == "unixs" {
			continue
		}
		host, _, err := net.SplitHostPort(u.Host)
		if err == nil {
			err = check(u, host)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) validateBootstrapSource() error {
	sources := 0
	for _, set := range []bool{c.InitialCluster != "", c.DNSCluster != "", len(c.DiscoveryCfg.Client.Endpoints) > 0} {
		if set {
			sources++
		}
	}
	if c.ClusterState != ClusterStateNew && c.ClusterState != ClusterStateExisting {
		return fmt.Errorf("unexpected clusterState %q", c.ClusterState)
	}
	if sources > 1 {
		return ErrConflictBootstrapFlags
	}
	if (c.DiscoveryCfg.Token != "") != (len(c.DiscoveryCfg.Client.Endpoints) > 0) {
		return errors.New("both --discovery-token and --discovery-endpoints must be set")
	}
	for _, ep := range c.DiscoveryCfg.Client.Endpoints {
		if strings.TrimSpace(ep) == "" {
			return errors.New("--discovery-endpoints must not contain empty endpoints")
		}
	}
	return nil
}

func (c *Config) validateTiming() error {
	if c.TickMs == 0 {
		return fmt.Errorf("--heartbeat-interval must be >0 (set to %dms)", c.TickMs)
	}
	if c.ElectionMs == 0 {
		return fmt.Errorf("--election-timeout must be >0 (set to %dms)", c.ElectionMs)
	}
	if 5*c.TickMs > c.ElectionMs {
		return fmt.Errorf("--election-timeout[%vms] should be at least as 5 times as --heartbeat-interval[%vms]", c.ElectionMs, c.TickMs)
	}
	if c.ElectionMs > maxElectionMs {
		return fmt.Errorf("--election-timeout[%vms] is too long, and should be set less than %vms", c.ElectionMs, maxElectionMs)
	}
	return nil
}

func (c *Config) validateMisc() error {
	if c.ListenClientUrls != nil && c.AdvertiseClientUrls == nil {
		return ErrUnsetAdvertiseClientURLsFlag
	}
	switch c.AutoCompactionMode {
	case "periodic", "revision":
	case "":
		return errors.New("undefined auto-compaction-mode")
	default:
		return fmt.Errorf("unknown auto-compaction-mode %q", c.AutoCompactionMode)
	}
	// etcd finds a bad retention only when it starts the server; same message.
	if _, err := c.CompactionRetention(); err != nil {
		return err
	}
	if c.FeatureEnabled("LeaseCheckpointPersist") && !c.FeatureEnabled("LeaseCheckpoint") {
		return errors.New("enabling feature gate LeaseCheckpointPersist requires enabling feature gate LeaseCheckpoint")
	}
	if c.Dashboard && !c.EnableGRPCGateway {
		return errors.New("--experimental-dashboard needs --enable-grpc-gateway: the dashboard talks to the member through the gateway")
	}
	if c.CompactHashCheckTime <= 0 {
		return fmt.Errorf("--compact-hash-check-time must be >0 (set to %v)", c.CompactHashCheckTime)
	}
	return c.validateAutoDefrag()
}

// validateAutoDefrag checks cairn's automatic reclamation flags.
func (c *Config) validateAutoDefrag() error {
	if c.AutoDefragFreePercent > 100 {
		return fmt.Errorf("--experimental-auto-defrag-free-percent must be between 0 and 100 (set to %d)", c.AutoDefragFreePercent)
	}
	if c.AutoDefragFreePercent > 0 && c.AutoDefragInterval <= 0 {
		return fmt.Errorf("--experimental-auto-defrag-interval must be >0 (set to %v)", c.AutoDefragInterval)
	}
	return nil
}

func (c *Config) validateTLSVersions() error {
	minV, err := tlsVersion(c.TlsMinVersion)
	if err != nil {
		return err
	}
	maxV, err := tlsVersion(c.TlsMaxVersion)
	if err != nil {
		return err
	}
	if maxV != 0 && minV > maxV {
		return fmt.Errorf("min version (%s) is greater than max version (%s)", c.TlsMinVersion, c.TlsMaxVersion)
	}
	if minV == 13 && len(c.CipherSuites) > 0 {
		return errors.New("cipher suites cannot be configured when only TLS1.3 is enabled")
	}
	// etcd finds unknown names when it starts its listeners; same message.
	if _, err := tlsutil.CipherSuites(c.CipherSuites); err != nil {
		return err
	}
	return nil
}

// tlsVersion orders TLS version names; 0 means "let Go choose".
func tlsVersion(v string) (int, error) {
	switch v {
	case "":
		return 0, nil
	case "TLS1.2":
		return 12, nil
	case "TLS1.3":
		return 13, nil
	}
	return 0, fmt.Errorf("unexpected TLS version %q (must be one of: TLS1.2, TLS1.3)", v)
}

// VerifyBootstrap checks --initial-cluster before a new cluster is
// bootstrapped: this member must be in it, with exactly its advertised
// peer URLs, and no URL may belong to two members.
func (c *Config) VerifyBootstrap() error {
	m, err := c.clusterWithLocalMember()
	if err != nil {
		return err
	}
	if err := c.advertiseMatchesCluster(m); err != nil {
		return err
	}
	if err := noDuplicateURL(m); err != nil {
		return err
	}
	if len(m) == 0 && len(c.DiscoveryCfg.Client.Endpoints) == 0 {
		return errors.New("initial cluster unset and no discovery endpoints found")
	}
	return nil
}

// VerifyJoinExisting checks --initial-cluster before joining an existing
// cluster (--initial-cluster-state=existing with an empty data dir).
func (c *Config) VerifyJoinExisting() error {
	m, err := c.clusterWithLocalMember()
	if err != nil {
		return err
	}
	if err := noDuplicateURL(m); err != nil {
		return err
	}
	if len(c.DiscoveryCfg.Client.Endpoints) > 0 {
		return errors.New("discovery URL should not be set when joining existing initial cluster")
	}
	return nil
}

// clusterWithLocalMember is --initial-cluster, which must name this member.
func (c *Config) clusterWithLocalMember() (map[string][]url.URL, error) {
	m, err := c.InitialClusterMap()
	if err != nil {
		return nil, err
	}
	if m[c.Name] == nil {
		return nil, fmt.Errorf("couldn't find local name %q in the initial cluster configuration", c.Name)
	}
	return m, nil
}

// noDuplicateURL refuses an initial cluster in which two members share a URL.
func noDuplicateURL(m map[string][]url.URL) error {
	if hasDuplicateURL(m) {
		return fmt.Errorf("initial cluster %s has duplicate url", urlsMapString(m))
	}
	return nil
}

// advertiseMatchesCluster compares URLs as strings. etcd additionally
// resolves host names before giving up; cairn does not, so two spellings
// of one address (a name and its IP) are reported as a mismatch.
func (c *Config) advertiseMatchesCluster(m map[string][]url.URL) error {
	inCluster := urlStrings(m[c.Name])
	advertised := urlStrings(c.AdvertisePeerUrls)
	sort.Strings(inCluster)
	sort.Strings(advertised)
	if strings.Join(inCluster, ",") == strings.Join(advertised, ",") {
		return nil
	}
	apStr := strings.Join(advertised, ",")
	self := urlsMapString(map[string][]url.URL{c.Name: c.AdvertisePeerUrls})
	if missing := missingFrom(inCluster, advertised); len(missing) > 0 {
		for i := range missing {
			missing[i] = c.Name + "=" + missing[i]
		}
		return fmt.Errorf("--initial-cluster has %s but missing from --initial-advertise-peer-urls=%s (%s)",
			strings.Join(missing, ","), apStr, mismatchReason(advertised, inCluster))
	}
	if missing := missingFrom(advertised, inCluster); len(missing) > 0 {
		return fmt.Errorf("--initial-advertise-peer-urls has %s but missing from --initial-cluster=%s",
			strings.Join(missing, ","), self)
	}
	return fmt.Errorf("failed to resolve %s to match --initial-cluster=%s (%s)", apStr, self, mismatchReason(advertised, inCluster))
}

// mismatchReason words the comparison failure as etcd's URL comparison does.
func mismatchReason(a, b []string) string {
	if len(a) != len(b) {
		return fmt.Sprintf("len(%q) != len(%q)", a, b)
	}
	return fmt.Sprintf("%q != %q", a, b)
}

// missingFrom returns the members of want not in have.
func missingFrom(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !contains(have, w) && !contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func hasDuplicateURL(m map[string][]url.URL) bool {
	seen := map[string]bool{}
	for _, us := range m {
		for _, u := range us {
			if seen[u.String()] {
				return true
			}
			seen[u.String()] = true
		}
	}
	return false
}

// CompactionRetention is --auto-compaction-retention read for
// --auto-compaction-mode: a duration (periodic) or a revision count as a
// Duration (revision); 0 turns auto compaction off.
func (c *Config) CompactionRetention() (time.Duration, error) {
	return compactor.ParseRetention(c.AutoCompactionMode, c.AutoCompactionRetention)
}
