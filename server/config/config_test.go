package config

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, args, env []string) *Config {
	t.Helper()
	c, err := Parse(args, env)
	if err != nil {
		t.Fatalf("Parse(%q, %q): %v", args, env, err)
	}
	return c
}

func joinURLs(c []string) string { return strings.Join(c, ",") }

func hasNotice(c *Config, msg string) bool {
	for _, n := range c.Notices {
		if n.Message == msg {
			return true
		}
	}
	return false
}

func TestDefaults(t *testing.T) {
	c := mustParse(t, nil, nil)
	checks := []struct {
		name      string
		got, want any
	}{
		{"name", c.Name, "default"},
		{"data-dir", c.Dir, "default.etcd"},
		{"wal-dir", c.WalDir, ""},
		{"listen-client-urls", joinURLs(urlStrings(c.ListenClientUrls)), "http://localhost:2379"},
		{"advertise-client-urls", joinURLs(urlStrings(c.AdvertiseClientUrls)), "http://localhost:2379"},
		{"listen-peer-urls", joinURLs(urlStrings(c.ListenPeerUrls)), "http://localhost:2380"},
		{"initial-advertise-peer-urls", joinURLs(urlStrings(c.AdvertisePeerUrls)), "http://localhost:2380"},
		{"initial-cluster", c.InitialCluster, "default=http://localhost:2380"},
		{"initial-cluster-token", c.InitialClusterToken, "etcd-cluster"},
		{"initial-cluster-state", c.ClusterState, "new"},
		{"snapshot-count", c.SnapshotCount, uint64(10000)},
		{"snapshot-catchup-entries", c.SnapshotCatchUpEntries, uint64(5000)},
		{"heartbeat-interval", c.TickMs, uint(100)},
		{"election-timeout", c.ElectionMs, uint(1000)},
		{"quota-backend-bytes", c.QuotaBackendBytes, int64(0)},
		{"max-txn-ops", c.MaxTxnOps, uint(128)},
		{"max-request-bytes", c.MaxRequestBytes, uint(1572864)},
		{"max-snapshots", c.MaxSnapFiles, uint(5)},
		{"max-wals", c.MaxWalFiles, uint(5)},
		{"backend-batch-interval", c.BackendBatchInterval, 100 * time.Millisecond},
		{"backend-batch-limit", c.BackendBatchLimit, 10000},
		{"log-level", c.LogLevel, "info"},
		{"logger", c.Logger, "zap"},
		{"log-outputs", strings.Join(c.LogOutputs, ","), "default"},
		{"unsafe-no-fsync", c.UnsafeNoFsync, false},
		{"pre-vote", c.PreVote, true},
		{"strict-reconfig-check", c.StrictReconfigCheck, true},
		{"max-concurrent-streams", c.MaxConcurrentStreams, uint32(math.MaxUint32)},
		{"enable-pprof", c.EnablePprof, false},
		{"print-version", c.PrintVersion, false},
		{"print-help", c.PrintHelp, false},
		{"quota at use", c.EffectiveQuotaBackendBytes(), int64(2 << 30)},
	}
	for _, tc := range checks {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if !hasNotice(c, "'data-dir' was empty; using default") {
		t.Errorf("missing data-dir notice in %+v", c.Notices)
	}
}

func TestFlagForms(t *testing.T) {
	tests := []struct {
		name string
		args []string
		get  func(*Config) any
		want any
	}{
		{"double dash equals", []string{"--name=a"}, func(c *Config) any { return c.Name }, "a"},
		{"double dash space", []string{"--name", "b"}, func(c *Config) any { return c.Name }, "b"},
		{"single dash equals", []string{"-name=c"}, func(c *Config) any { return c.Name }, "c"},
		{"single dash space", []string{"-name", "d"}, func(c *Config) any { return c.Name }, "d"},
		{"last wins", []string{"--name=x", "--name=y"}, func(c *Config) any { return c.Name }, "y"},
		{"bool alone", []string{"--unsafe-no-fsync"}, func(c *Config) any { return c.UnsafeNoFsync }, true},
		{"bool false", []string{"--pre-vote=false"}, func(c *Config) any { return c.PreVote }, false},
		{"uint", []string{"--snapshot-count", "5"}, func(c *Config) any { return c.SnapshotCount }, uint64(5)},
		{"duration", []string{"--backend-batch-interval=1s"}, func(c *Config) any { return c.BackendBatchInterval }, time.Second},
		{"zero batch interval means default", []string{"--backend-batch-interval=0"}, func(c *Config) any { return c.BackendBatchInterval }, 100 * time.Millisecond},
		{"uint32", []string{"--max-concurrent-streams=0x10"}, func(c *Config) any { return c.MaxConcurrentStreams }, uint32(16)},
		{"url list sorted, deduplicated", []string{"--listen-peer-urls=http://127.0.0.2:2380,http://127.0.0.1:2380,http://127.0.0.1:2380"},
			func(c *Config) any { return joinURLs(urlStrings(c.ListenPeerUrls)) }, "http://127.0.0.1:2380,http://127.0.0.2:2380"},
		{"url list last wins", []string{"--listen-peer-urls=http://127.0.0.1:1", "--listen-peer-urls=http://127.0.0.1:2"},
			func(c *Config) any { return joinURLs(urlStrings(c.ListenPeerUrls)) }, "http://127.0.0.1:2"},
		{"log outputs", []string{"--log-outputs=stdout,stderr"}, func(c *Config) any { return strings.Join(c.LogOutputs, ",") }, "stderr,stdout"},
		{"console log format", []string{"--log-format=console"}, func(c *Config) any { return c.LogFormat }, "console"},
		{"fast lease keepalive off", []string{"--feature-gates=FastLeaseKeepAlive=false"}, func(c *Config) any { return c.FeatureEnabled("FastLeaseKeepAlive") }, false},
		{"downgrade check time", []string{"--downgrade-check-time=2s"}, func(c *Config) any { return c.DowngradeCheckTime }, 2 * time.Second},
		{"cluster state", []string{"--initial-cluster-state=existing"}, func(c *Config) any { return c.ClusterState }, "existing"},
		{"name derives initial cluster", []string{"--name=n1"}, func(c *Config) any { return c.InitialCluster }, "n1=http://localhost:2380"},
		{"name derives data dir", []string{"--name=n1"}, func(c *Config) any { return c.Dir }, "n1.etcd"},
		{"ignored v2 flag", []string{"--snapshot"}, func(c *Config) any { return c.Name }, "default"},
		{"unsupported flag at default", []string{"--corrupt-check-time=0s"}, func(c *Config) any { return c.CorruptCheckTime }, time.Duration(0)},
		{"client cert file", []string{"--cert-file=/c.pem"}, func(c *Config) any { return c.ClientTLSInfo.CertFile }, "/c.pem"},
		{"peer client cert auth", []string{"--peer-client-cert-auth"}, func(c *Config) any { return c.PeerTLSInfo.ClientCertAuth }, true},
		{"peer allowed cns", []string{"--peer-cert-allowed-cn=a,b"}, func(c *Config) any { return strings.Join(c.PeerTLSInfo.AllowedCNs, ",") }, "a,b"},
		{"cipher suites", []string{"--cipher-suites=TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"}, func(c *Config) any { return strings.Join(c.CipherSuites, ",") }, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"},
		{"harmless feature gate", []string{"--feature-gates=TxnModeWriteWithSharedBuffer=false"},
			func(c *Config) any { return c.FeatureEnabled("TxnModeWriteWithSharedBuffer") }, false},
		{"lease checkpoint on by default", nil,
			func(c *Config) any {
				return c.FeatureEnabled("LeaseCheckpoint") && c.FeatureEnabled("LeaseCheckpointPersist")
			}, true},
		{"lease checkpoint off", []string{"--feature-gates=LeaseCheckpoint=false"},
			func(c *Config) any {
				return c.FeatureEnabled("LeaseCheckpoint") || c.FeatureEnabled("LeaseCheckpointPersist")
			}, false},
		{"lease checkpoint without persist", []string{"--feature-gates=LeaseCheckpointPersist=false"},
			func(c *Config) any {
				return c.FeatureEnabled("LeaseCheckpoint") && !c.FeatureEnabled("LeaseCheckpointPersist")
			}, true},
		{"all alpha off", []string{"--feature-gates=AllAlpha=false"},
			func(c *Config) any { return c.FeatureEnabled("LeaseCheckpoint") }, false},
		{"corruption checks", []string{"--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true"},
			func(c *Config) any {
				return c.FeatureEnabled("InitialCorruptCheck") && c.FeatureEnabled("CompactHashCheck")
			}, true},
		{"corruption checks off by default", nil,
			func(c *Config) any {
				return c.FeatureEnabled("InitialCorruptCheck") || c.FeatureEnabled("CompactHashCheck") || c.CorruptCheckTime != 0
			}, false},
		{"corrupt check time", []string{"--corrupt-check-time=3s"}, func(c *Config) any { return c.CorruptCheckTime }, 3 * time.Second},
		{"compact hash check time default", nil, func(c *Config) any { return c.CompactHashCheckTime }, time.Minute},
		{"compact hash check time", []string{"--compact-hash-check-time=10s"}, func(c *Config) any { return c.CompactHashCheckTime }, 10 * time.Second},
		{"lease checkpoint interval default", nil, func(c *Config) any { return c.LeaseCheckpointInterval }, 5 * time.Minute},
		{"lease checkpoint interval", []string{"--experimental-lease-checkpoint-interval=1s"}, func(c *Config) any { return c.LeaseCheckpointInterval }, time.Second},
		{"auto defrag on by default", nil, func(c *Config) any {
			return [3]any{c.AutoDefragFreePercent, c.AutoDefragMinFreeMegabytes, c.AutoDefragInterval}
		}, [3]any{uint(50), uint(100), 10 * time.Minute}},
		{"auto defrag off", []string{"--experimental-auto-defrag-free-percent=0"}, func(c *Config) any { return c.AutoDefragFreePercent }, uint(0)},
		{"auto defrag settings", []string{"--experimental-auto-defrag-free-percent=30", "--experimental-auto-defrag-min-free-megabytes=1", "--experimental-auto-defrag-interval=1m"},
			func(c *Config) any {
				return [3]any{c.AutoDefragFreePercent, c.AutoDefragMinFreeMegabytes, c.AutoDefragInterval}
			}, [3]any{uint(30), uint(1), time.Minute}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.get(mustParse(t, tc.args, nil)); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// parseErrorCase is flags (and environment) that Parse must refuse, with
// the text its error must hold and whether it is a usage error.
type parseErrorCase struct {
	name      string
	args      []string
	env       []string
	want      string
	wantUsage bool
}

func checkParseErrors(t *testing.T, tests []parseErrorCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.args, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want containing %q", err, tc.want)
			}
			var ue *UsageError
			if errors.As(err, &ue) != tc.wantUsage {
				t.Errorf("UsageError = %v, want %v (%T)", !tc.wantUsage, tc.wantUsage, err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	checkParseErrors(t, []parseErrorCase{
		{"unknown flag", []string{"--foo"}, nil, "flag provided but not defined: -foo", true},
		{"unknown cipher", []string{"--cipher-suites=not_found"}, nil, `unexpected TLS cipher suite "not_found"`, false},
		{"bad tls version", []string{"--tls-max-version=TLS1.1"}, nil, `unexpected TLS version "TLS1.1" (must be one of: TLS1.2, TLS1.3)`, false},
		{"tls min above max", []string{"--tls-min-version=TLS1.3", "--tls-max-version=TLS1.2"}, nil, "min version (TLS1.3) is greater than max version (TLS1.2)", false},
		{"ciphers with TLS1.3 only", []string{"--tls-min-version=TLS1.3", "--cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, nil, "cipher suites cannot be configured when only TLS1.3 is enabled", false},
		{"bad uint", []string{"--heartbeat-interval=x"}, nil, `invalid value "x" for flag -heartbeat-interval: parse error`, true},
		{"missing value", []string{"--name"}, nil, "flag needs an argument: -name", true},
		{"bad url scheme", []string{"--listen-peer-urls=ftp://1.2.3.4:1"}, nil, "URL scheme must be http, https, unix, or unixs: ftp://1.2.3.4:1", true},
		{"url without port", []string{"--listen-peer-urls=http://1.2.3.4"}, nil, `URL address does not have the form "host:port": http://1.2.3.4`, true},
		{"port above 65535", []string{"--listen-client-urls=http://127.0.0.1:99999", "--advertise-client-urls=http://127.0.0.1:1"}, nil,
			`invalid value "http://127.0.0.1:99999" for flag -listen-client-urls: address 99999: invalid port in http://127.0.0.1:99999`, true},
		{"peer port above 65535", []string{"--listen-peer-urls=http://127.0.0.1:65536"}, nil, "address 65536: invalid port in http://127.0.0.1:65536", true},
		{"non-numeric port", []string{"--listen-peer-urls=http://127.0.0.1:abc"}, nil, `parse "http://127.0.0.1:abc": invalid port ":abc" after host`, true},
		{"url with path", []string{"--listen-peer-urls=http://1.2.3.4:1/x"}, nil, "URL must not contain a path: http://1.2.3.4:1/x", true},
		{"bad cluster state", []string{"--initial-cluster-state=old"}, nil, `invalid value "old" for flag -initial-cluster-state: invalid value`, true},
		{"positional", []string{"extra"}, nil, `"extra" is not a valid flag`, false},
		{"unsupported", []string{"--enable-distributed-tracing"}, nil, "cairn: --enable-distributed-tracing is not supported yet", false},
		{"unsupported via env", nil, []string{"ETCD_ENABLE_DISTRIBUTED_TRACING=true"}, "cairn: --enable-distributed-tracing is not supported yet", false},
		{"zero compact hash check time", []string{"--compact-hash-check-time=0s"}, nil, "--compact-hash-check-time must be >0 (set to 0s)", false},
		{"auto defrag percent over 100", []string{"--experimental-auto-defrag-free-percent=101"}, nil, "--experimental-auto-defrag-free-percent must be between 0 and 100 (set to 101)", false},
		{"zero auto defrag interval", []string{"--experimental-auto-defrag-interval=0s"}, nil, "--experimental-auto-defrag-interval must be >0 (set to 0s)", false},
		{"persist without checkpoint", []string{"--feature-gates=LeaseCheckpoint=false,LeaseCheckpointPersist=true"}, nil, "enabling feature gate LeaseCheckpointPersist requires enabling feature gate LeaseCheckpoint", false},
		{"unknown gate", []string{"--feature-gates=Nope=true"}, nil, "unrecognized feature gate: Nope", true},
		{"proxy fallback", []string{"--discovery-fallback=proxy"}, nil, `v2 proxy is deprecated, and --discovery-fallback can't be configured as "proxy"`, false},
		{"bad env value", nil, []string{"ETCD_SNAPSHOT_COUNT=x"}, `invalid value "x" for ETCD_SNAPSHOT_COUNT: parse error`, false},
		{"shadowed env", []string{"--name=a"}, []string{"ETCD_NAME=b"}, `conflicting environment variable "ETCD_NAME" is shadowed`, false},
		{"missing advertise", []string{"--listen-client-urls=http://127.0.0.1:2379"}, nil, ErrUnsetAdvertiseClientURLsFlag.Error(), false},
		{"election vs heartbeat", []string{"--heartbeat-interval=300"}, nil, "--election-timeout[1000ms] should be at least as 5 times as --heartbeat-interval[300ms]", false},
		{"election too long", []string{"--election-timeout=50001"}, nil, "--election-timeout[50001ms] is too long, and should be set less than 50000ms", false},
		{"zero heartbeat", []string{"--heartbeat-interval=0"}, nil, "--heartbeat-interval must be >0 (set to 0ms)", false},
		{"bind to name", []string{"--listen-peer-urls=http://example.com:2380"}, nil, "expected IP in URL for binding (http://example.com:2380)", false},
		{"bad log level", []string{"--log-level=loud"}, nil, `unrecognized level: "loud"`, false},
		{"bad logger", []string{"--logger=capnslog"}, nil, "--logger=capnslog is removed in v3.5", false},
		{"bad log format", []string{"--log-format=xml"}, nil, "unknown log format: xml, supported values json, console", false},
		{"default with other outputs", []string{"--log-outputs=default,stdout"}, nil, `multi logoutput for "default" is not supported yet`, false},
	})
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}} {
		if c := mustParse(t, args, nil); !c.PrintHelp {
			t.Errorf("%q: PrintHelp not set", args)
		}
	}
	c := mustParse(t, []string{"--version", "--heartbeat-interval=0"}, nil)
	if !c.PrintVersion {
		t.Error("--version: PrintVersion not set")
	}
	c = mustParse(t, nil, []string{"ETCD_VERSION=true"})
	if c.PrintVersion || !hasNotice(c, "cannot set special environment variable") {
		t.Errorf("ETCD_VERSION must be refused with a notice: %+v", c)
	}
}

func TestEnvironment(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    []string
		get    func(*Config) any
		want   any
		notice string
	}{
		{"env sets flag", nil, []string{"ETCD_NAME=e1"}, func(c *Config) any { return c.Name }, "e1", "recognized and used environment variable"},
		{"env url list", nil, []string{"ETCD_LISTEN_PEER_URLS=http://127.0.0.1:1,http://127.0.0.1:2"},
			func(c *Config) any { return joinURLs(urlStrings(c.ListenPeerUrls)) }, "http://127.0.0.1:1,http://127.0.0.1:2", ""},
		{"flag and env for different flags", []string{"--name=f"}, []string{"ETCD_SNAPSHOT_COUNT=7"}, func(c *Config) any { return c.SnapshotCount }, uint64(7), ""},
		{"empty env ignored", nil, []string{"ETCD_NAME="}, func(c *Config) any { return c.Name }, "default", "unrecognized environment variable"},
		{"unknown env warned", nil, []string{"ETCD_NOPE=1"}, func(c *Config) any { return c.Name }, "default", "unrecognized environment variable"},
		{"other prefix silent", nil, []string{"ETCDCTL_API=3", "PATH=/bin"}, func(c *Config) any { return len(c.Notices) }, 4, ""}, // 3 + the quota's
		{"listen env without advertise", nil, []string{"ETCD_LISTEN_CLIENT_URLS=http://127.0.0.1:1", "ETCD_ADVERTISE_CLIENT_URLS=http://127.0.0.1:1"},
			func(c *Config) any { return joinURLs(urlStrings(c.AdvertiseClientUrls)) }, "http://127.0.0.1:1", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, tc.args, tc.env)
			if got := tc.get(c); got != tc.want {
				t.Errorf("got %v, want %v (notices %+v)", got, tc.want, c.Notices)
			}
			if tc.notice != "" && !hasNotice(c, tc.notice) {
				t.Errorf("missing notice %q in %+v", tc.notice, c.Notices)
			}
		})
	}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "etcd.conf.yml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigFile(t *testing.T) {
	path := writeFile(t, `
name: infra1
data-dir: /var/lib/infra1
heartbeat-interval: 200
election-timeout: 2000
listen-client-urls: http://127.0.0.1:2379,http://10.0.0.1:2379
advertise-client-urls: http://10.0.0.1:2379
listen-peer-urls: http://10.0.0.1:2380
initial-advertise-peer-urls: http://10.0.0.1:2380
initial-cluster: infra1=http://10.0.0.1:2380,infra2=http://10.0.0.2:2380
initial-cluster-state: existing
log-outputs: [stdout]
backend-batch-interval: 50000000
quota-backend-bytes: 8589934592
unsafe-no-fsync: true
mystery-key: 1
`)
	for _, how := range []struct {
		name string
		args []string
		env  []string
	}{
		{"flag", []string{"--config-file=" + path, "--name=ignored"}, []string{"ETCD_SNAPSHOT_COUNT=1"}},
		{"env", []string{"--name=ignored"}, []string{"ETCD_CONFIG_FILE=" + path, "ETCD_NAME=ignored"}},
	} {
		t.Run(how.name, func(t *testing.T) {
			c := mustParse(t, how.args, how.env)
			checks := []struct {
				name      string
				got, want any
			}{
				{"name", c.Name, "infra1"},
				{"dir", c.Dir, "/var/lib/infra1"},
				{"tick", c.TickMs, uint(200)},
				{"election", c.ElectionMs, uint(2000)},
				{"listen-client", joinURLs(urlStrings(c.ListenClientUrls)), "http://10.0.0.1:2379,http://127.0.0.1:2379"},
				{"state", c.ClusterState, "existing"},
				{"log-outputs", strings.Join(c.LogOutputs, ","), "stdout"},
				{"batch interval", c.BackendBatchInterval, 50 * time.Millisecond},
				{"quota", c.QuotaBackendBytes, int64(8 << 30)},
				{"nofsync", c.UnsafeNoFsync, true},
				{"snapshot-count default", c.SnapshotCount, uint64(10000)},
				{"config file", c.ConfigFile, path},
			}
			for _, tc := range checks {
				if tc.got != tc.want {
					t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
				}
			}
			for _, msg := range []string{"loaded server configuration, other configuration command line flags and environment variables will be ignored if provided",
				"ignoring unknown configuration file key"} {
				if !hasNotice(c, msg) {
					t.Errorf("missing notice %q", msg)
				}
			}
		})
	}
}

func TestConfigFileErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"bad url", "listen-peer-urls: ftp://x:1\n", "unexpected error setting up listen-peer-urls: URL scheme must be"},
		{"bad state", "initial-cluster-state: old\n", `unexpected clusterState "old"`},
		{"unsupported", "enable-distributed-tracing: true\n", "cairn: --enable-distributed-tracing is not supported yet"},
		{"log rotation without a file", "enable-log-rotation: true\n", ErrLogRotationInvalidLogOutput.Error()},
		{"unknown cipher", "cipher-suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, not_found]\n", `unexpected TLS cipher suite "not_found"`},
		{"bad yaml", "name: [\n", "yaml"},
		{"bad gate", "feature-gates: X=true\n", "unrecognized feature gate: X"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]string{"--config-file", writeFile(t, tc.body)}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want containing %q", err, tc.want)
			}
		})
	}
	if _, err := Parse([]string{"--config-file=/nonexistent/x.yml"}, nil); err == nil {
		t.Error("missing file: want error")
	}
}

func TestVerifyBootstrap(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"default", nil, ""},
		{"named", []string{"--name=a", "--initial-advertise-peer-urls=http://10.0.0.1:2380"}, ""},
		{"three members", []string{"--name=b", "--initial-advertise-peer-urls=http://10.0.0.2:2380",
			"--initial-cluster=a=http://10.0.0.1:2380,b=http://10.0.0.2:2380,c=http://10.0.0.3:2380"}, ""},
		{"not a member", []string{"--name=z", "--initial-cluster=a=http://10.0.0.1:2380"},
			`couldn't find local name "z" in the initial cluster configuration`},
		{"cluster has extra url", []string{"--name=a", "--initial-cluster=a=http://localhost:2380,a=http://10.0.0.9:2380"},
			"--initial-cluster has a=http://10.0.0.9:2380 but missing from --initial-advertise-peer-urls=http://localhost:2380"},
		{"advertise has extra url", []string{"--name=a", "--initial-advertise-peer-urls=http://10.0.0.1:2380,http://10.0.0.2:2380",
			"--initial-cluster=a=http://10.0.0.1:2380"},
			"--initial-advertise-peer-urls has http://10.0.0.2:2380 but missing from --initial-cluster=a=http://10.0.0.1:2380,a=http://10.0.0.2:2380"},
		{"duplicate url", []string{"--name=a", "--initial-cluster=a=http://localhost:2380,b=http://localhost:2380"},
			"initial cluster a=http://localhost:2380,b=http://localhost:2380 has duplicate url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := mustParse(t, tc.args, nil).VerifyBootstrap()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestInitialClusterMap(t *testing.T) {
	c := mustParse(t, []string{"--name=a", "--initial-advertise-peer-urls=http://10.0.0.1:2380",
		"--initial-cluster=a=http://10.0.0.1:2380,b=http://10.0.0.2:2380,b=http://10.0.0.2:2381"}, nil)
	m, err := c.InitialClusterMap()
	if err != nil {
		t.Fatal(err)
	}
	if got := urlsMapString(m); got != "a=http://10.0.0.1:2380,b=http://10.0.0.2:2380,b=http://10.0.0.2:2381" {
		t.Errorf("map = %s", got)
	}
	c.InitialCluster = "a=ftp://x"
	if _, err := c.InitialClusterMap(); err == nil {
		t.Error("bad URL: want error")
	}
}

func TestVersionText(t *testing.T) {
	got := VersionText("abc123", "go1.26.0", "linux", "amd64")
	want := "etcd Version: 3.7.1\nGit SHA: abc123\nGo Version: go1.26.0\nGo OS/Arch: linux/amd64\ncairn Version: 0.1.0\n"
	if got != want {
		t.Errorf("VersionText = %q, want %q", got, want)
	}
}

func TestUsageListsEveryFlag(t *testing.T) {
	u := Usage()
	for _, o := range options {
		if o.section != "" && !strings.Contains(u, "--"+o.name+" '") {
			t.Errorf("Usage lacks --%s", o.name)
		}
	}
	if !strings.Contains(UsageLine(), "--config-file") {
		t.Error("UsageLine lacks --config-file")
	}
}
