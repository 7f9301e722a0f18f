// Package flagargs parses command lines whose flags and positional
// arguments are mixed, as cobra-based tools (etcdctl, etcdutl) accept
// them, with the standard flag package, which stops at the first
// positional argument.
package flagargs

import "flag"

// Parse parses fs from args, where flags may stand before, between and
// after the positional arguments, and returns the positional ones in
// order. Everything after a "--" is positional, flag-like or not.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
