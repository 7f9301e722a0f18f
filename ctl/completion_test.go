package ctl

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/pkg/completion/completiontest"
)

func completionScript(t *testing.T, shell string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run([]string{"completion", shell}, env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}); code != 0 {
		t.Fatalf("completion %s: exit %d: %s", shell, code, errOut.String())
	}
	return out.String()
}

// completionCases are command lines typed so far and what completing the
// last word must offer (all of want, and nothing not starting with it).
var completionCases = []struct {
	typed string
	want  []string
}{
	{"cairnctl le", []string{"lease"}},
	{"cairnctl lease ", []string{"grant", "keep-alive", "list", "revoke", "timetolive"}},
	{"cairnctl --endpoints 127.0.0.1:2379 member a", []string{"add"}},
	{"cairnctl -w json snapshot s", []string{"save"}},
	{"cairnctl del --pre", []string{"--prefix", "--prev-kv"}},
	{"cairnctl member add --peer", []string{"--peer-urls"}},
	{"cairnctl --dial-timeout=3s put --le", []string{"--lease"}},
	{"cairnctl completion ", nil}, // arguments, not commands
}

func TestCompletionBash(t *testing.T) {
	script := completionScript(t, "bash")
	for _, c := range completionCases {
		t.Run(c.typed, func(t *testing.T) {
			got := completiontest.Bash(t, progName, script, c.typed)
			checkCandidates(t, c.typed, got, c.want)
		})
	}
	// After a flag that takes a value bash's file completion applies.
	if got := completiontest.Bash(t, progName, script, "cairnctl --cacert "); len(got) != 0 {
		t.Fatalf("after --cacert: offered %v, want nothing (file names)", got)
	}
}

func TestCompletionFish(t *testing.T) {
	script := completionScript(t, "fish")
	for _, c := range completionCases {
		t.Run(c.typed, func(t *testing.T) {
			got := completiontest.Fish(t, progName, script, c.typed)
			checkCandidates(t, c.typed, got, c.want)
		})
	}
}

func TestCompletionZshParses(t *testing.T) {
	completiontest.ZshParses(t, progName, completionScript(t, "zsh"))
}

func TestCompletionErrors(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		var out, errOut bytes.Buffer
		code := run(args, env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }})
		if code != exitError || out.Len() != 0 || !strings.HasPrefix(errOut.String(), "Error: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and one error", args, code, out.String(), errOut.String())
		}
	}
}

func checkCandidates(t *testing.T, typed string, got, want []string) {
	t.Helper()
	last := typed[strings.LastIndex(typed, " ")+1:]
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("completing %q: %q missing from %v", typed, w, got)
		}
	}
	for _, g := range got {
		if !strings.HasPrefix(g, last) {
			t.Errorf("completing %q offered %q", typed, g)
		}
	}
	if want == nil && len(got) != 0 {
		t.Errorf("completing %q offered %v, want nothing", typed, got)
	}
}
