package config

import (
	"errors"
	"flag"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.uber.org/zap"
)

const envPrefix = "ETCD"

// UsageError is a command-line syntax error: an unknown flag, a flag
// without its value, or a value the flag cannot hold. etcd prints the
// message and the usage line to stderr and exits with status 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ShadowedEnvError reports an ETCD_ variable for a flag that is also given
// on the command line. etcd treats this as fatal (exit status 1) rather
// than letting either one win silently.
type ShadowedEnvError struct{ Variable string }

func (e *ShadowedEnvError) Error() string {
	return fmt.Sprintf("conflicting environment variable %q is shadowed by corresponding command-line flag (either unset environment variable or disable flag)", e.Variable)
}

// UnsupportedError names an etcd flag cairn knows but does not implement,
// given a value other than etcd's default.
type UnsupportedError struct{ Flag string }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("cairn: --%s is not supported yet", e.Flag)
}

// Parse builds the configuration from the command line (without argv[0])
// and the environment (as os.Environ returns it), then validates it.
//
// What the caller must do with the result, matching etcd:
//   - PrintHelp: print UsageLine() to stderr and Usage() to stdout, exit 0.
//   - PrintVersion: print VersionText(...) to stdout, exit 0.
//   - *UsageError: print the error and UsageLine() to stderr, exit 2.
//   - any other error: log "failed to verify flags" with the error, exit 1.
//   - otherwise: log c.Notices (LogNotices) and start the server.
func Parse(args []string, environ []string) (*Config, error) {
	c := NewConfig()
	fs := newFlagSet(c)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.PrintHelp = true
			return c, nil
		}
		return nil, &UsageError{Err: err}
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("%q is not a valid flag", fs.Arg(0))
	}
	if c.PrintVersion {
		return c, nil
	}
	env := newEnvironment(environ)
	if c.ConfigFile == "" {
		c.ConfigFile = env.get(flagToEnv("config-file"))
	}
	if c.ConfigFile != "" {
		return parseFile(c.ConfigFile)
	}
	return finishCommandLine(c, fs, env)
}

func parseFile(path string) (*Config, error) {
	c, explicit, err := loadFile(path)
	if err != nil {
		return nil, err
	}
	c.notice(zap.InfoLevel, "loaded server configuration, other configuration command line flags and environment variables will be ignored if provided",
		zap.String("path", path))
	return finish(c, explicit)
}

// finishCommandLine applies ETCD_* variables and etcd's command-line-only
// adjustments to the parsed flags.
func finishCommandLine(c *Config, fs *flag.FlagSet, env *environment) (*Config, error) {
	if err := applyEnv(c, fs, env); err != nil {
		return nil, err
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	// etcd's default advertise URL would point clients at localhost while
	// the member listens elsewhere; it insists on an explicit one instead.
	if explicit["listen-client-urls"] && !explicit["advertise-client-urls"] {
		c.AdvertiseClientUrls = nil
	}
	if c.usesDiscovery() && !explicit["initial-cluster"] {
		c.InitialCluster = ""
	}
	c.raiseRaftTimeouts()
	if c.DiscoveryFallback == "proxy" {
		return nil, errors.New(`v2 proxy is deprecated, and --discovery-fallback can't be configured as "proxy"`)
	}
	return finish(c, explicit)
}

// raiseRaftTimeouts lifts --raft-read-timeout and --raft-write-timeout to
// their minimum, as etcd does with flags (they have no YAML key).
func (c *Config) raiseRaftTimeouts() {
	for _, t := range []struct {
		name  string
		value *time.Duration
	}{{"raft-read-timeout", &c.RaftReadTimeout}, {"raft-write-timeout", &c.RaftWriteTimeout}} {
		if *t.value < MinRaftConnTimeout {
			*t.value = MinRaftConnTimeout
			c.notice(zap.InfoLevel, fmt.Sprintf("%s increased to minimum value: %v", t.name, MinRaftConnTimeout))
		}
	}
}

func (c *Config) usesDiscovery() bool {
	return c.DNSCluster != "" || c.DNSClusterServiceName != "" || len(c.DiscoveryCfg.Client.Endpoints) > 0
}

// finish runs the steps common to flags and file: rejection of what cairn
// cannot do, validation, and the defaults etcd fills in after parsing.
func finish(c *Config, explicit map[string]bool) (*Config, error) {
	if err := c.checkUnsupported(); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.noteDeprecated(explicit)
	c.noteQuota()
	c.fillDerivedDefaults()
	return c, nil
}

// fillDerivedDefaults does what etcd's main does once flags are parsed:
// derive --initial-cluster from --name, and --data-dir from --name.
func (c *Config) fillDerivedDefaults() {
	// V2Deprecation is enforced to its default whatever the user gave.
	c.V2Deprecation = "write-only"
	if c.BackendBatchInterval == 0 {
		c.BackendBatchInterval = DefaultBackendBatchInterval
	}
	if c.BackendBatchLimit == 0 {
		c.BackendBatchLimit = DefaultBackendBatchLimit
	}
	if len(c.ListenClientHttpUrls) == 0 {
		c.notice(zap.WarnLevel, "Running http and grpc server on single port. This is not recommended for production.")
	}
	if c.Name == DefaultName {
		c.notice(zap.WarnLevel, "it isn't recommended to use default name, please set a value for --name. "+
			"Note that etcd might run into issue when multiple members have the same default name", zap.String("name", c.Name))
	}
	defaultCluster := NewConfig().InitialCluster
	if c.Name != DefaultName && c.InitialCluster == defaultCluster {
		c.InitialCluster = c.InitialClusterFromName(c.Name)
	}
	if c.Dir == "" {
		c.Dir = c.Name + ".etcd"
		c.notice(zap.WarnLevel, "'data-dir' was empty; using default", zap.String("data-dir", c.Dir))
	}
}

var deprecatedFlags = map[string]string{
	"max-snapshots":  "--max-snapshots is deprecated in 3.6 and will be decommissioned in 3.8.",
	"v2-deprecation": "--v2-deprecation is deprecated and scheduled for removal in v3.8. The default value is enforced, ignoring user input.",
}

func (c *Config) noteDeprecated(explicit map[string]bool) {
	for _, name := range []string{"max-snapshots", "v2-deprecation"} {
		if explicit[name] {
			c.notice(zap.WarnLevel, deprecatedFlags[name])
		}
	}
}

// checkUnsupported rejects any flag cairn does not implement whose value
// differs from etcd's default. Comparing values rather than noting which
// flags were given treats flags, variables and YAML alike.
func (c *Config) checkUnsupported() error {
	defaults := NewConfig()
	for _, o := range options {
		if o.supported || o.name == "feature-gates" {
			continue
		}
		if !sameValue(o.field.get(c), o.field.get(defaults)) {
			return &UnsupportedError{Flag: o.name}
		}
	}
	if gates := c.unsupportedGates(); len(gates) > 0 {
		return &UnsupportedError{Flag: "feature-gates=" + strings.Join(gates, ",")}
	}
	return nil
}

// sameValue is reflect.DeepEqual except that a nil and an empty slice or
// map are the same: YAML's "[]" must not count as a change.
func sameValue(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() == vb.Kind() && (va.Kind() == reflect.Slice || va.Kind() == reflect.Map) && va.Len() == 0 && vb.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}
