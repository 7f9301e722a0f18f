package utl

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/pkg/completion/completiontest"
)

func TestCompletionBash(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main([]string{"completion", "bash"}, &out, &errOut); code != exitOK {
		t.Fatalf("completion bash: exit %d: %s", code, errOut.String())
	}
	cases := []struct {
		typed string
		want  []string
	}{
		{"cairnutl sn", []string{"snapshot"}},
		{"cairnutl snapshot ", []string{"restore", "restore-cluster", "status"}},
		{"cairnutl -w json snapshot restore --init", []string{"--initial-advertise-peer-urls", "--initial-cluster", "--initial-cluster-token", "--initial-memory-map-size"}},
		{"cairnutl defrag --", []string{"--data-dir", "--timeout", "--write-out"}},
		{"cairnutl migrate --target-version 3.6 --f", []string{"--force"}},
	}
	for _, c := range cases {
		t.Run(c.typed, func(t *testing.T) {
			got := completiontest.Bash(t, "cairnutl", out.String(), c.typed)
			last := c.typed[strings.LastIndex(c.typed, " ")+1:]
			for _, w := range c.want {
				if !slices.Contains(got, w) {
					t.Errorf("%q missing from %v", w, got)
				}
			}
			for _, g := range got {
				if !strings.HasPrefix(g, last) {
					t.Errorf("offered %q", g)
				}
			}
		})
	}
}

func TestCompletionOtherShells(t *testing.T) {
	for _, shell := range []string{"zsh", "fish"} {
		var out, errOut bytes.Buffer
		if code := Main([]string{"completion", shell}, &out, &errOut); code != exitOK {
			t.Fatalf("completion %s: exit %d: %s", shell, code, errOut.String())
		}
		if shell == "zsh" {
			completiontest.ZshParses(t, "cairnutl", out.String())
			continue
		}
		if got := completiontest.Fish(t, "cairnutl", out.String(), "cairnutl snapshot st"); !slices.Equal(got, []string{"status"}) {
			t.Errorf("fish: completing %q offered %v", "cairnutl snapshot st", got)
		}
	}
}
