package ctl

import (
	"flag"
	"strings"
	"testing"
)

func runCapture(args ...string) (code int, stdout, stderr string) {
	var out, errb strings.Builder
	code = run(args, env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

func TestFlagErrors(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"get", "--nosuch", "a"}, "unknown flag: --nosuch"},
		{[]string{"get", "-x", "a"}, "unknown shorthand flag: 'x' in -x"},
		{[]string{"get", "a", "--rev"}, "flag needs an argument: --rev"},
		{[]string{"get", "a", "-w"}, "flag needs an argument: 'w' in -w"},
		{[]string{"get", "a", "--rev=x"}, `invalid argument "x" for "--rev" flag: strconv.ParseInt: parsing "x": invalid syntax`},
		{[]string{"watch", "a", "-i=maybe"}, `invalid argument "maybe" for "-i, --interactive" flag: strconv.ParseBool: parsing "maybe": invalid syntax`},
		{[]string{"get", "a", "--dial-timeout", "soon"}, `invalid argument "soon" for "--dial-timeout" flag: time: invalid duration "soon"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCapture(tt.args...)
			if code != exitError || out != "" {
				t.Fatalf("exit %d stdout %q", code, out)
			}
			want := "Error: " + tt.wantErr + "\nUsage:\n  cairnctl " + tt.args[0] + " "
			if !strings.HasPrefix(errOut, want) || !strings.HasSuffix(errOut, "\n\n") {
				t.Fatalf("stderr:\n%s\nwant prefix:\n%s", errOut, want)
			}
		})
	}
}

func TestFlagUsages(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var o opts
	watchFlags(fs, &o)
	fs.String("consistency", "l", "Linearizable(l) or Serializable(s)")
	fs.Uint("max-txn-ops", 128, "Maximum ops")
	registerHelp(fs, &node{name: "x", parent: &node{}})
	want := `      --consistency string   Linearizable(l) or Serializable(s) (default "l")
  -h, --help                 help for x
  -i, --interactive          Interactive mode
      --max-txn-ops uint     Maximum ops (default 128)
      --prefix               Watch on a prefix if prefix is set
      --prev-kv              get the previous key-value pair before the event happens
      --progress-notify      get periodic watch progress notification from server
      --rev int              Revision to start watching
`
	if got := flagUsages(fs, nil); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestHelpOutput(t *testing.T) {
	tests := []struct {
		args       []string
		code       int
		stdoutHas  []string
		stderrHas  []string
		stdoutNone bool
	}{
		{args: nil, stdoutHas: []string{"A simple command line client for etcd3.\n\nUsage:\n  cairnctl [command]\n\nKey-value commands\n", "  watch       Watches events stream on keys or prefixes\n", "\nUse \"cairnctl [command] --help\" for more information about a command.\n" + optionsPrompt}},
		{args: []string{"--help"}, stdoutHas: []string{"Utility commands\n", "  help        Help about any command\n"}},
		{args: []string{"le", "gr", "--help"}, stdoutHas: []string{"Creates leases\n\nUsage:\n  cairnctl lease grant <ttl> [flags]\n\nFlags:\n  -h, --help   help for grant\n" + optionsPrompt}},
		{args: []string{"lease", "foo"}, stdoutHas: []string{"Lease related commands\n\nUsage:\n  cairnctl lease [command]\n\nAvailable Commands:\n  grant       Creates leases\n"}},
		{args: []string{"help", "watch"}, stdoutHas: []string{"  cairnctl watch [options] [key or prefix] [range_end] [--] [exec-command arg1 arg2 ...] [flags]\n"}},
		{args: []string{"help", "nosuch", "x"}, stderrHas: []string{"Unknown help topic [`nosuch` `x`]\nUsage:\n  cairnctl [command]\n"}, stdoutNone: true},
		{args: []string{"wach"}, code: exitError, stderrHas: []string{"Error: unknown command \"wach\" for \"cairnctl\"\n\nDid you mean this?\n\twatch\n\nRun 'cairnctl --help' for usage.\n"}, stdoutNone: true},
		{args: []string{"zzz"}, code: exitError, stderrHas: []string{"Error: unknown command \"zzz\" for \"cairnctl\"\nRun 'cairnctl --help' for usage.\n"}, stdoutNone: true},
		{args: []string{"options"}, stdoutHas: []string{"      --endpoints strings            gRPC endpoints (default [127.0.0.1:2379])\n", "  -w, --write-out string             set the output format (fields, json, protobuf, simple, table) (default \"simple\")\n"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCapture(tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.code, errOut)
			}
			for _, s := range tt.stdoutHas {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tt.stderrHas {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut)
				}
			}
			if tt.stdoutNone && out != "" {
				t.Errorf("stdout %q, want none", out)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	root := buildTree()
	tests := []struct {
		words    []string
		wantPath string
		wantUsed int
	}{
		{[]string{"get", "k"}, "get", 1},
		{[]string{"le", "grant", "10"}, "lease grant", 2},
		{[]string{"m"}, "", 0}, // ambiguous: make-mirror, member, move-leader
		{[]string{"lease", "nosuch"}, "lease", 1},
		{[]string{"check", "p"}, "check perf", 2},
	}
	for _, tt := range tests {
		n, used := root.resolve(tt.words)
		if n.path != tt.wantPath || used != tt.wantUsed {
			t.Errorf("%q: %q after %d words, want %q after %d", tt.words, n.path, used, tt.wantPath, tt.wantUsed)
		}
	}
	if got := strings.Join(root.suggest("m"), ","); got != "move-leader,member,make-mirror" {
		t.Errorf("suggestions for m: %s", got)
	}
}
