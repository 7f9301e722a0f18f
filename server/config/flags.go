package config

import (
	"flag"
	"io"
	"net/url"
	"time"
)

// Help sections, in the order Usage prints them.
const (
	secMember     = "Member"
	secClustering = "Clustering"
	secSecurity   = "Security"
	secAuth       = "Auth"
	secProfiling  = "Profiling and Monitoring"
	secLogging    = "Logging"
	secTracing    = "Distributed tracing"
	secV2Proxy    = "v2 Proxy"
	secFeature    = "Features"
	secUnsafe     = "Unsafe feature"
)

var sections = []string{secMember, secClustering, secSecurity, secAuth, secProfiling,
	secLogging, secTracing, secV2Proxy, secFeature, secUnsafe}

// fieldRef ties a flag to the Config field it sets.
type fieldRef interface {
	register(fs *flag.FlagSet, c *Config, name string)
	get(c *Config) any
}

type ref[T any] struct {
	at   func(*Config) *T
	bind func(fs *flag.FlagSet, p *T, name string)
}

func (r ref[T]) register(fs *flag.FlagSet, c *Config, name string) { r.bind(fs, r.at(c), name) }
func (r ref[T]) get(c *Config) any                                 { return *r.at(c) }

func str(at func(*Config) *string) fieldRef {
	return ref[string]{at, func(fs *flag.FlagSet, p *string, n string) { fs.StringVar(p, n, *p, "") }}
}

func boolean(at func(*Config) *bool) fieldRef {
	return ref[bool]{at, func(fs *flag.FlagSet, p *bool, n string) { fs.BoolVar(p, n, *p, "") }}
}

func uintRef(at func(*Config) *uint) fieldRef {
	return ref[uint]{at, func(fs *flag.FlagSet, p *uint, n string) { fs.UintVar(p, n, *p, "") }}
}

func uint64Ref(at func(*Config) *uint64) fieldRef {
	return ref[uint64]{at, func(fs *flag.FlagSet, p *uint64, n string) { fs.Uint64Var(p, n, *p, "") }}
}

func intRef(at func(*Config) *int) fieldRef {
	return ref[int]{at, func(fs *flag.FlagSet, p *int, n string) { fs.IntVar(p, n, *p, "") }}
}

func int64Ref(at func(*Config) *int64) fieldRef {
	return ref[int64]{at, func(fs *flag.FlagSet, p *int64, n string) { fs.Int64Var(p, n, *p, "") }}
}

func uint32Ref(at func(*Config) *uint32) fieldRef {
	return ref[uint32]{at, func(fs *flag.FlagSet, p *uint32, n string) { fs.Var(uint32Flag{p}, n, "") }}
}

func duration(at func(*Config) *time.Duration) fieldRef {
	return ref[time.Duration]{at, func(fs *flag.FlagSet, p *time.Duration, n string) { fs.DurationVar(p, n, *p, "") }}
}

func urls(at func(*Config) *[]url.URL) fieldRef {
	return ref[[]url.URL]{at, func(fs *flag.FlagSet, p *[]url.URL, n string) { fs.Var(urlsFlag{p}, n, "") }}
}

func list(at func(*Config) *[]string) fieldRef {
	return ref[[]string]{at, func(fs *flag.FlagSet, p *[]string, n string) { fs.Var(stringsFlag{p}, n, "") }}
}

func set(at func(*Config) *[]string) fieldRef {
	return ref[[]string]{at, func(fs *flag.FlagSet, p *[]string, n string) { fs.Var(uniqueStringsFlag{p}, n, "") }}
}

func choice(at func(*Config) *string, valids ...string) fieldRef {
	return ref[string]{at, func(fs *flag.FlagSet, p *string, n string) { fs.Var(choiceFlag{p, valids}, n, "") }}
}

func choices(at func(*Config) *string, valids ...string) fieldRef {
	return ref[string]{at, func(fs *flag.FlagSet, p *string, n string) { fs.Var(choicesFlag{p, valids}, n, "") }}
}

func cors(at func(*Config) *[]string) fieldRef {
	return ref[[]string]{at, func(fs *flag.FlagSet, p *[]string, n string) { fs.Var(corsFlag{p}, n, "") }}
}

func gates(at func(*Config) *map[string]bool) fieldRef {
	return ref[map[string]bool]{at, func(fs *flag.FlagSet, p *map[string]bool, n string) { fs.Var(featureGatesFlag{p}, n, "") }}
}

// option is one etcd server flag. supported says whether cairn honours
// it; an unsupported option is accepted only at its default value.
type option struct {
	name      string
	section   string
	field     fieldRef
	supported bool
	shown     string // default as printed by Usage, when not the flag's own
	help      string
}

// ignoredFlags are etcd v2 relics that etcd still parses and ignores.
var ignoredFlags = []string{
	"cluster-active-size", "cluster-remove-delay", "cluster-sync-interval", "config",
	"force", "max-result-buffer", "max-retry-attempts", "peer-heartbeat-interval",
	"peer-election-timeout", "retry-interval", "snapshot", "v", "vv",
	"test.coverprofile", "test.outputdir",
}

// newFlagSet binds every etcd flag to c. Errors and usage are left to the
// caller, so the set never prints.
func newFlagSet(c *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for _, o := range options {
		o.field.register(fs, c, o.name)
	}
	for _, name := range ignoredFlags {
		fs.Var(ignoredFlag{}, name, "")
	}
	return fs
}
