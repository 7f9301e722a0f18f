// Package completion writes shell completion scripts (bash, zsh, fish) for
// a command-line program described as a tree of commands and their flags.
//
// The scripts are static: everything they offer is written into them when
// they are generated, so completing a word never runs the program. Each
// script walks the words typed so far from the program's name, follows
// subcommand names (skipping flags and the values of flags that take one),
// and then offers the subcommands of the command reached, or its flags
// when the word being completed starts with "-". After a flag that takes a
// value, the shell's own file-name completion applies.
//
// It knows nothing about any particular program; callers build the tree
// from their own command table.
package completion

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Command is one command of the tree: the root (the program) or a
// subcommand.
type Command struct {
	Name  string
	Flags []Flag // accepted by this command, the global ones included
	Subs  []*Command
}

// Flag is one flag. A one-letter Name is written -x, a longer one --name.
type Flag struct {
	Name       string
	TakesValue bool
}

// Word is how the flag is typed on a command line.
func (f Flag) Word() string {
	if len(f.Name) == 1 {
		return "-" + f.Name
	}
	return "--" + f.Name
}

// FlagsOf lists the flags of a Go flag set, booleans marked as taking no
// value.
func FlagsOf(fs *flag.FlagSet) []Flag {
	var out []Flag
	fs.VisitAll(func(f *flag.Flag) {
		b, ok := f.Value.(interface{ IsBoolFlag() bool })
		out = append(out, Flag{Name: f.Name, TakesValue: !ok || !b.IsBoolFlag()})
	})
	return out
}

// Write writes the completion script of prog for shell ("bash", "zsh" or
// "fish").
func Write(w io.Writer, shell, prog string, root *Command) error {
	var script func(b *strings.Builder, prog string, t tables)
	switch shell {
	case "bash":
		script = writeBash
	case "zsh":
		script = writeZsh
	case "fish":
		script = writeFish
	default:
		return fmt.Errorf("unsupported shell %q (bash, zsh or fish)", shell)
	}
	var b strings.Builder
	script(&b, prog, newTables(root))
	_, err := io.WriteString(w, b.String())
	return err
}

// Shells are the shells Write supports.
var Shells = []string{"bash", "fish", "zsh"}

// tables are the tree flattened by command path ("" for the root, "lease
// grant" for a nested command), the form every script embeds.
type tables struct {
	paths      []string            // sorted
	subs       map[string][]string // path -> subcommand names
	flags      map[string][]Flag   // path -> flags
	valueWords []string            // every flag word that takes a value, anywhere
}

func newTables(root *Command) tables {
	t := tables{subs: map[string][]string{}, flags: map[string][]Flag{}}
	values := map[string]bool{}
	var walk func(path string, c *Command)
	walk = func(path string, c *Command) {
		t.paths = append(t.paths, path)
		t.flags[path] = c.Flags
		for _, f := range c.Flags {
			if f.TakesValue {
				values[f.Word()] = true
			}
		}
		for _, s := range c.Subs {
			t.subs[path] = append(t.subs[path], s.Name)
			walk(strings.TrimSpace(path+" "+s.Name), s)
		}
		sort.Strings(t.subs[path])
	}
	walk("", root)
	sort.Strings(t.paths)
	for w := range values {
		t.valueWords = append(t.valueWords, w)
	}
	sort.Strings(t.valueWords)
	return t
}

func (t tables) flagWords(path string) string {
	var words []string
	for _, f := range t.flags[path] {
		words = append(words, f.Word())
	}
	sort.Strings(words)
	return strings.Join(words, " ")
}

// ident turns prog into a shell function name part.
func ident(prog string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, prog)
}
