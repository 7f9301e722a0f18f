//go:build failpoints

package failpoint

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Enabled reports whether this build contains failpoints.
const Enabled = true

// EnvVar arms failpoints at start, in gofail's syntax.
const EnvVar = "GOFAIL_FAILPOINTS"

// ErrNotArmed is returned by Disable for a point that is not armed.
var ErrNotArmed = errors.New("failpoint: not armed")

// point is one armed failpoint.
type point struct {
	mu    sync.Mutex
	spec  string
	terms []term
	hits  int // times an action other than off fired
}

var (
	mu     sync.RWMutex
	points = map[string]*point{}
	// armed is len(points), read without the lock so that Inject costs
	// one atomic load while nothing is armed.
	armed atomic.Int32
)

// sleep stalls the caller for a sleep action; tests replace it.
var sleep = time.Sleep

// crash ends the process for a panic action; tests replace it.
var crash = func(name string) {
	fmt.Fprintf(os.Stderr, "failpoint panic: %s\n", name)
	// os.Exit rather than panic: no deferred function runs (a deferred
	// commit or close would hide exactly the bugs a crash is meant to
	// find) and no recover() in a handler can swallow it.
	os.Exit(2)
}

func init() {
	if s := os.Getenv(EnvVar); s != "" {
		if err := enableAll(s); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", EnvVar, err)
			os.Exit(2)
		}
	}
}

// enableAll arms every point of a GOFAIL_FAILPOINTS value, or none.
func enableAll(env string) error {
	specs, err := parseEnv(env)
	if err != nil {
		return err
	}
	for _, spec := range specs {
		if _, err := parseTerms(spec); err != nil {
			return err
		}
	}
	for name, spec := range specs {
		_ = Enable(name, spec) // parsed above
	}
	return nil
}

// Inject runs the action armed for name, if any.
func Inject(name string) {
	if armed.Load() == 0 {
		return
	}
	mu.RLock()
	p := points[name]
	mu.RUnlock()
	if p != nil {
		p.fire(name)
	}
}

func (p *point) fire(name string) {
	p.mu.Lock()
	t := next(p.terms)
	if t == nil || t.act == actOff {
		p.mu.Unlock()
		return
	}
	p.hits++
	act, d := t.act, t.sleep
	p.mu.Unlock()
	switch act {
	case actPanic:
		crash(name)
	case actSleep:
		sleep(d)
	case actPrint:
		fmt.Fprintf(os.Stderr, "failpoint print: %s\n", name)
	}
}

// Enable arms name with spec (gofail terms), replacing what it had and
// resetting its hit count.
func Enable(name, spec string) error {
	if err := checkName(name); err != nil {
		return err
	}
	terms, err := parseTerms(spec)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	points[name] = &point{spec: spec, terms: terms}
	armed.Store(int32(len(points)))
	return nil
}

// Disable disarms name.
func Disable(name string) error {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := points[name]; !ok {
		return ErrNotArmed
	}
	delete(points, name)
	armed.Store(int32(len(points)))
	return nil
}

// Armed returns "name=terms" for every armed point, sorted by name.
func Armed() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(points))
	for name, p := range points {
		out = append(out, name+"="+p.spec)
	}
	slices.Sort(out)
	return out
}

// Status returns the terms armed for name and how often it has fired.
func Status(name string) (spec string, hits int, ok bool) {
	mu.RLock()
	p := points[name]
	mu.RUnlock()
	if p == nil {
		return "", 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spec, p.hits, true
}
