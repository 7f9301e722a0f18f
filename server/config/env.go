package config

import (
	"flag"
	"fmt"
	"strings"

	"go.uber.org/zap"
)

// environment is the process environment as given to Parse, in order.
type environment struct {
	entries []string
	values  map[string]string
}

func newEnvironment(environ []string) *environment {
	e := &environment{entries: environ, values: make(map[string]string, len(environ))}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := e.values[k]; !dup { // the first definition wins, as with getenv
			e.values[k] = v
		}
	}
	return e
}

func (e *environment) get(key string) string { return e.values[key] }

// flagToEnv maps a flag name to its variable: data-dir => ETCD_DATA_DIR.
func flagToEnv(name string) string {
	return envPrefix + "_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// versionEnv would turn a server start into a version print; etcd refuses
// to take it from the environment.
const versionEnv = "ETCD_VERSION"

// applyEnv sets every flag not given on the command line from its ETCD_
// variable, then reports variables that conflict or name no flag. Empty
// values are ignored, as in etcd.
func applyEnv(c *Config, fs *flag.FlagSet, env *environment) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[flagToEnv(f.Name)] = true })
	used := map[string]bool{}
	if v := env.get(versionEnv); v != "" {
		used[versionEnv] = true
		c.notice(zap.WarnLevel, "cannot set special environment variable", zap.String("key", versionEnv), zap.String("value", v))
	}
	var setErr error
	fs.VisitAll(func(f *flag.Flag) {
		key := flagToEnv(f.Name)
		val := env.get(key)
		if given[key] || used[key] || val == "" {
			return
		}
		used[key] = true
		if err := fs.Set(f.Name, val); err != nil {
			setErr = fmt.Errorf("invalid value %q for %s: %w", val, key, err)
			return
		}
		c.notice(zap.InfoLevel, "recognized and used environment variable",
			zap.String("variable-name", key), zap.String("variable-value", val))
	})
	if setErr != nil {
		return setErr
	}
	return verifyEnv(c, env, used, given)
}

func verifyEnv(c *Config, env *environment, used, given map[string]bool) error {
	for _, kv := range env.entries {
		key, _, ok := strings.Cut(kv, "=")
		if !ok {
			c.notice(zap.WarnLevel, "found invalid environment variable", zap.String("environment-variable", kv))
		}
		if used[key] {
			continue
		}
		if given[key] {
			return &ShadowedEnvError{Variable: key}
		}
		if strings.HasPrefix(kv, envPrefix+"_") {
			c.notice(zap.WarnLevel, "unrecognized environment variable", zap.String("environment-variable", kv))
		}
	}
	return nil
}
