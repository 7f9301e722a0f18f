package utl

import (
	"errors"
	"flag"
	"fmt"
	"slices"

	"github.com/cairnkv/cairn/pkg/completion"
)

// errDescribed ends a leaf command run only to learn its flags.
var errDescribed = errors.New("flags described")

// runCompletion prints the completion script of the shell named by its
// one argument.
func runCompletion(e *env, args []string) error {
	pos, err := e.parseCommand("completion", args, nil)
	if err != nil {
		return err
	}
	if len(pos) != 1 || !slices.Contains(completion.Shells, pos[0]) {
		return withUsage(fmt.Errorf("completion expects one argument: bash, zsh or fish"), "completion", nil)
	}
	return completion.Write(e.stdout, pos[0], "cairnutl", describe(rootCommand()))
}

// describe builds the completion tree of c: a parent's flags are the
// global ones; a leaf's are whatever it defines, learned by running it
// with describe set so that it hands over its flag set instead of parsing.
func describe(c *command) *completion.Command {
	out := &completion.Command{Name: c.name}
	if c.run == nil {
		fs := newFlagSet(c.name)
		(&env{}).registerGlobals(fs)
		out.Flags = completion.FlagsOf(fs)
	} else {
		var flags []completion.Flag
		e := &env{describe: func(fs *flag.FlagSet) { flags = completion.FlagsOf(fs) }}
		_ = c.run(e, nil) // returns errDescribed
		out.Flags = flags
	}
	for _, s := range c.subs {
		out.Subs = append(out.Subs, describe(s))
	}
	return out
}
