package completion_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/cairnkv/cairn/pkg/completion"
	"github.com/cairnkv/cairn/pkg/completion/completiontest"
)

// tree is a small program: "tool [--config v] [-q] (serve [--port v] | db (dump | load))".
func tree() *completion.Command {
	global := []completion.Flag{{Name: "config", TakesValue: true}, {Name: "q"}}
	return &completion.Command{Name: "tool", Flags: global, Subs: []*completion.Command{
		{Name: "serve", Flags: append(global, completion.Flag{Name: "port", TakesValue: true})},
		{Name: "db", Flags: global, Subs: []*completion.Command{{Name: "dump", Flags: global}, {Name: "load", Flags: global}}},
	}}
}

func script(t *testing.T, shell string) string {
	t.Helper()
	var b bytes.Buffer
	if err := completion.Write(&b, shell, "tool", tree()); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestBashWalksCommandsAndFlags(t *testing.T) {
	s := script(t, "bash")
	cases := []struct {
		typed string
		want  []string
	}{
		{"tool ", []string{"db", "serve"}},
		{"tool d", []string{"db"}},
		{"tool db ", []string{"dump", "load"}},
		{"tool --config db db ", []string{"dump", "load"}}, // "db" after --config is its value
		{"tool --config=x db l", []string{"load"}},
		{"tool -q serve --", []string{"--config", "--port"}},
		{"tool serve --port ", nil}, // a value: the shell's file names
		{"tool db dump ", nil},
		{"tool nosuch ", []string{"db", "serve"}}, // unknown words are arguments
	}
	for _, c := range cases {
		if got := completiontest.Bash(t, "tool", s, c.typed); !slices.Equal(got, c.want) {
			t.Errorf("completing %q: got %v, want %v", c.typed, got, c.want)
		}
	}
}

func TestFishWalksCommandsAndFlags(t *testing.T) {
	s := script(t, "fish")
	if got := completiontest.Fish(t, "tool", s, "tool --config db db "); !slices.Equal(got, []string{"dump", "load"}) {
		t.Errorf("fish: got %v", got)
	}
	if got := completiontest.Fish(t, "tool", s, "tool serve --p"); !slices.Equal(got, []string{"--port"}) {
		t.Errorf("fish: got %v", got)
	}
}

func TestZshParses(t *testing.T) { completiontest.ZshParses(t, "tool", script(t, "zsh")) }

func TestUnknownShell(t *testing.T) {
	if err := completion.Write(&bytes.Buffer{}, "tcsh", "tool", tree()); err == nil {
		t.Fatal("tcsh accepted")
	}
}
