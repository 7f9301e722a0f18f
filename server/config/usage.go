package config

import (
	"flag"
	"strings"
)

// UsageLine is the short usage etcd prints to stderr for --help and after
// a command-line error.
func UsageLine() string {
	return `Usage:

  cairn [flags]
    Start a cairn server (an etcd v3.7 compatible member).

  cairn --version
    Show the version of cairn and of etcd it is compatible with.

  cairn -h | --help
    Show the help information about cairn.

  cairn --config-file
    Path to the server configuration file. When given, other command line flags and environment variables are ignored.
`
}

// Usage is the flag reference printed to stdout for --help: every etcd
// flag by section with its default, in etcd's layout. Flags cairn does not
// implement yet are marked; they are accepted only at their default.
func Usage() string {
	defaults := newFlagSet(NewConfig())
	var b strings.Builder
	for _, section := range sections {
		body := sectionUsage(section, defaults.Lookup)
		if body == "" {
			continue
		}
		b.WriteString("\n" + section + ":\n" + body)
	}
	b.WriteString("\nEvery flag can also be set with an ETCD_<FLAG> environment variable (for example ETCD_DATA_DIR).\n")
	b.WriteString("\nCAUTIOUS with unsafe flag! It may break the guarantees given by the consensus protocol!\n")
	return b.String()
}

func sectionUsage(section string, lookup func(string) *flag.Flag) string {
	var b strings.Builder
	for _, o := range options {
		if o.section != section {
			continue
		}
		def := o.shown
		if def == "" {
			def = lookup(o.name).DefValue
		}
		b.WriteString("  --" + o.name + " '" + def + "'\n    " + o.help)
		if !o.supported {
			b.WriteString(" (not supported by cairn yet)")
		}
		b.WriteString("\n")
	}
	return b.String()
}
