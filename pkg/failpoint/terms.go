//go:build failpoints

package failpoint

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// action is what a term does when it fires.
type action int

const (
	actOff action = iota
	actPanic
	actSleep
	actPrint
)

// term is one step of a chain: act, count times (0: for ever).
type term struct {
	act   action
	sleep time.Duration
	count int
	left  int // passes left while count > 0
}

// parseTerms parses gofail's terms syntax: term("->"term)*, where a term
// is [N*]action[(arg)].
func parseTerms(spec string) ([]term, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, errors.New("failpoint: empty terms")
	}
	var terms []term
	for _, s := range strings.Split(spec, "->") {
		t, err := parseTerm(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("failpoint: %q: %w", spec, err)
		}
		terms = append(terms, t)
	}
	return terms, nil
}

func parseTerm(s string) (term, error) {
	var t term
	if s == "" {
		return t, errors.New("empty term")
	}
	// A prefix ends at the first '%' or '*' that comes before any '('.
	if i := strings.IndexAny(s, "%*("); i >= 0 {
		switch s[i] {
		case '%':
			return t, errors.New("probabilities (N%) are not supported")
		case '*':
			n, err := strconv.Atoi(s[:i])
			if err != nil || n <= 0 {
				return t, fmt.Errorf("bad count %q", s[:i])
			}
			t.count, t.left, s = n, n, s[i+1:]
		}
	}
	name, arg, hasArg, err := splitCall(s)
	if err != nil {
		return t, err
	}
	switch name {
	case "off", "panic", "print":
		if hasArg {
			return t, fmt.Errorf("%s takes no argument", name)
		}
		t.act = map[string]action{"off": actOff, "panic": actPanic, "print": actPrint}[name]
	case "sleep":
		if !hasArg {
			return t, errors.New("sleep needs a duration: sleep(100) or sleep(\"100ms\")")
		}
		if t.sleep, err = parseSleep(arg); err != nil {
			return t, err
		}
		t.act = actSleep
	case "return":
		return t, errors.New("return is not supported: no call site takes a value")
	default:
		return t, fmt.Errorf("unknown action %q", name)
	}
	return t, nil
}

// splitCall splits "name(arg)" into its parts.
func splitCall(s string) (name, arg string, hasArg bool, err error) {
	open := strings.IndexByte(s, '(')
	if open < 0 {
		return s, "", false, nil
	}
	if !strings.HasSuffix(s, ")") {
		return "", "", false, fmt.Errorf("unbalanced parenthesis in %q", s)
	}
	return s[:open], s[open+1 : len(s)-1], true, nil
}

// parseSleep reads sleep's argument: milliseconds, or a quoted duration.
func parseSleep(arg string) (time.Duration, error) {
	var d time.Duration
	if strings.HasPrefix(arg, `"`) {
		s, err := strconv.Unquote(arg)
		if err != nil {
			return 0, fmt.Errorf("bad sleep argument %s", arg)
		}
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("bad sleep argument %s: %w", arg, err)
		}
	} else {
		ms, err := strconv.Atoi(arg)
		if err != nil {
			return 0, fmt.Errorf("bad sleep argument %q: milliseconds or a quoted duration", arg)
		}
		d = time.Duration(ms) * time.Millisecond
	}
	if d < 0 {
		return 0, fmt.Errorf("negative sleep %s", arg)
	}
	return d, nil
}

// next consumes one pass of the chain and returns the term that fires, or
// nil once every counted term is used up.
func next(terms []term) *term {
	for i := range terms {
		t := &terms[i]
		if t.count == 0 {
			return t
		}
		if t.left > 0 {
			t.left--
			return t
		}
	}
	return nil
}

// parseEnv parses GOFAIL_FAILPOINTS: name=terms pairs separated by ';'.
func parseEnv(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ";") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, spec, ok := strings.Cut(pair, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return nil, fmt.Errorf("failpoint: %q is not name=terms", pair)
		}
		if err := checkName(name); err != nil {
			return nil, err
		}
		out[name] = spec
	}
	return out, nil
}

func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, "/=; \t\n") {
		return fmt.Errorf("failpoint: bad name %q", name)
	}
	return nil
}
