package config

import (
	"flag"
	"io"
	"net/url"
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

// withDefault makes the constructor of a field bound by a flag.FlagSet
// method of its type, with the field's value as the default.
func withDefault[T any](bindVar func(fs *flag.FlagSet, p *T, name string, value T, usage string)) func(at func(*Config) *T) fieldRef {
	return func(at func(*Config) *T) fieldRef {
		return ref[T]{at, func(fs *flag.FlagSet, p *T, n string) { bindVar(fs, p, n, *p, "") }}
	}
}

// throughValue makes the constructor of a field set through a flag.Value
// of cairn's (lists, URLs, restricted choices).
func throughValue[T any](value func(p *T) flag.Value) func(at func(*Config) *T) fieldRef {
	return func(at func(*Config) *T) fieldRef {
		return ref[T]{at, func(fs *flag.FlagSet, p *T, n string) { fs.Var(value(p), n, "") }}
	}
}

// The constructors the option tables use, one per kind of field.
var (
	str       = withDefault((*flag.FlagSet).StringVar)
	boolean   = withDefault((*flag.FlagSet).BoolVar)
	uintRef   = withDefault((*flag.FlagSet).UintVar)
	uint64Ref = withDefault((*flag.FlagSet).Uint64Var)
	intRef    = withDefault((*flag.FlagSet).IntVar)
	int64Ref  = withDefault((*flag.FlagSet).Int64Var)
	duration  = withDefault((*flag.FlagSet).DurationVar)

	uint32Ref = throughValue(func(p *uint32) flag.Value { return uint32Flag{p} })
	urls      = throughValue(func(p *[]url.URL) flag.Value { return listFlag[url.URL]{p, parseUniqueURLs, urlStrings} })
	list      = throughValue(func(p *[]string) flag.Value { return listFlag[string]{p, splitList, sameStrings} })
	set       = throughValue(func(p *[]string) flag.Value { return listFlag[string]{p, splitSet, sameStrings} })
	cors      = throughValue(func(p *[]string) flag.Value { return listFlag[string]{p, corsOrigins, sameStrings} })
	gates     = throughValue(func(p *map[string]bool) flag.Value { return featureGatesFlag{p} })
)

func choice(at func(*Config) *string, valids ...string) fieldRef {
	return throughValue(func(p *string) flag.Value { return choiceFlag{p, valids} })(at)
}

func choices(at func(*Config) *string, valids ...string) fieldRef {
	return throughValue(func(p *string) flag.Value { return choicesFlag{p, valids} })(at)
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
