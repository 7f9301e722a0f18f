package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairnkv/cairn/tests/compat/etcdtools"
)

// module is the import path the cairn commands are built from.
const module = "github.com/cairnkv/cairn/cmd/"

var (
	buildMu  sync.Mutex
	buildDir string                // made by the first Build, removed by Main
	builds   = map[string]*built{} // by name and tags
)

type built struct {
	once sync.Once
	path string
	err  error
}

// Build returns the path of cmd/<name> ("cairn", "cairnctl", "cairnutl")
// built with the given build tags. Each name and tag set is compiled at
// most once per test binary run; later calls return the same file. The
// build has no -race: the server is a black box to these tests, and a plain
// build compiles and runs much faster.
func Build(name string, tags ...string) (string, error) {
	key := name + " " + strings.Join(tags, ",")
	buildMu.Lock()
	b := builds[key]
	if b == nil {
		b = &built{}
		builds[key] = b
	}
	buildMu.Unlock()
	b.once.Do(func() { b.path, b.err = compile(name, tags) })
	return b.path, b.err
}

func compile(name string, tags []string) (string, error) {
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		out += "-" + strings.Join(tags, "-")
		args = []string{"build", "-tags", strings.Join(tags, ","), "-o", out}
	}
	cmd := exec.Command("go", append(args, module+name)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", name, err, msg)
	}
	return out, nil
}

func binDir() (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir == "" {
		d, err := os.MkdirTemp("", "cairn-test-bin-")
		if err != nil {
			return "", err
		}
		buildDir = d
	}
	return buildDir, nil
}

// Binary is Build for a test: it fails t if the build fails.
func Binary(t testing.TB, name string, tags ...string) string {
	t.Helper()
	p, err := Build(name, tags...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Main runs setup (typically resolving the binaries every test needs, so
// that a broken build fails once rather than in each test), then the tests,
// stops the members StartShared started and removes the binaries Build
// made. It returns the exit code for os.Exit.
func Main(m *testing.M, setup ...func() error) int {
	defer func() {
		buildMu.Lock()
		defer buildMu.Unlock()
		if buildDir != "" {
			os.RemoveAll(buildDir)
		}
	}()
	return stopShared(run(m, setup))
}

func run(m *testing.M, setup []func() error) int {
	for _, s := range setup {
		if err := s(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// Builds returns a setup for Main that builds each cmd/<name> and stores its
// path through the matching pointer.
func Builds(bins map[string]*string) func() error {
	return func() error {
		for name, dst := range bins {
			p, err := Build(name)
			if err != nil {
				return err
			}
			*dst = p
		}
		return nil
	}
}

// EtcdTools returns a setup for Main that resolves etcd v3.7.3's own tools
// ("etcd", "etcdctl", "etcdutl"), building any not cached yet.
func EtcdTools(bins map[string]*string) func() error {
	return func() error {
		for name, dst := range bins {
			p, err := etcdtools.Path(name)
			if err != nil {
				return fmt.Errorf("building %s %s: %w", name, etcdtools.Version, err)
			}
			*dst = p
		}
		return nil
	}
}

// Etcd returns the real etcd v3.7.3's tool name, skipping the test if it
// cannot be built. In -short mode it is never built, only used when cached.
func Etcd(t testing.TB, name string) string {
	t.Helper()
	if testing.Short() {
		dir, err := etcdtools.Dir()
		if err != nil {
			t.Skipf("etcd %s cache: %v", etcdtools.Version, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "bin", name)); err != nil {
			t.Skipf("etcd %s not built yet; not building it in -short mode", etcdtools.Version)
		}
	}
	p, err := etcdtools.Path(name)
	if err != nil {
		t.Skipf("etcd %s not available: %v", etcdtools.Version, err)
	}
	return p
}
