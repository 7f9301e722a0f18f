// Package etcdtools builds etcd v3.7's own binaries (etcd, etcdctl, etcdutl)
// from the Go module proxy so that compatibility tests can run cairn against
// the real thing. Nothing of etcd is vendored or committed: a throw-away
// module in a cache directory requires the released modules and builds them.
package etcdtools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Version is the etcd release the tools are built from.
const Version = "v3.7.3"

// tool names a binary and the package that builds it.
var tools = map[string]string{
	"etcd":    "go.etcd.io/etcd/server/v3",
	"etcdctl": "go.etcd.io/etcd/etcdctl/v3",
	"etcdutl": "go.etcd.io/etcd/etcdutl/v3",
}

// etcd's server module has no main package at its root; this small main
// calls its entry point.
const etcdMain = `package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
`

var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// Dir is where the binaries are cached: $CAIRN_ETCD_TOOLS, or the user cache dir.
func Dir() (string, error) {
	if d := os.Getenv("CAIRN_ETCD_TOOLS"); d != "" {
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "cairn", "etcd-"+Version), nil
}

// Path returns the path of the named tool ("etcd", "etcdctl" or "etcdutl"),
// building it first if it is not cached yet.
func Path(name string) (string, error) {
	pkg, ok := tools[name]
	if !ok {
		return "", fmt.Errorf("etcdtools: unknown tool %q", name)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[name]; ok {
		return p, nil
	}
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bin", name)
	if _, err := os.Stat(bin); err != nil {
		if err := build(dir, name, pkg, bin); err != nil {
			return "", err
		}
	}
	built[name] = bin
	return bin, nil
}

func build(dir, name, pkg, bin string) error {
	mod := filepath.Join(dir, "mod-"+name)
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return err
	}
	target := pkg
	if name == "etcd" {
		if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(etcdMain), 0o644); err != nil {
			return err
		}
		target = "."
	}
	steps := [][]string{
		{"go", "mod", "init", "etcdtools.local/" + name},
		{"go", "get", pkg + "@" + Version},
		{"go", "build", "-o", bin, target},
	}
	if _, err := os.Stat(filepath.Join(mod, "go.mod")); err == nil {
		steps = steps[1:]
	}
	for _, args := range steps {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("etcdtools: %v: %w\n%s", args, err, out)
		}
	}
	return nil
}
