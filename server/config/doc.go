// Package config owns the cairn server's configuration: etcd v3.7's
// command-line flags, ETCD_* environment variables and --config-file YAML,
// their defaults, the precedence between them, and the checks etcd makes
// before a member starts.
//
// Precedence follows etcd:
//   - --config-file (or ETCD_CONFIG_FILE) wins outright: the YAML file is
//     the whole configuration and other flags and ETCD_* variables are
//     ignored (Parse records etcd's notice saying so).
//   - Otherwise a flag given on the command line wins; an ETCD_<FLAG>
//     variable fills a flag that was not given. A variable for a flag that
//     was also given is an error, as in etcd (which exits with a fatal
//     log). An ETCD_ variable naming no flag is reported as unrecognized.
//
// Every etcd v3.7 server flag is known. Flags cairn does not implement yet
// are parsed and then rejected with "cairn: --<flag> is not supported yet"
// when their value differs from etcd's default; setting one to its default
// is accepted, because it changes nothing.
//
// The package never touches the process: Parse takes the arguments and the
// environment, and returns notices for the caller to log and errors for the
// caller to turn into exit codes (see Parse for which code is which).
package config
