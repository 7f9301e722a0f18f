package cairnctl

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// commandLineRE matches a command's line in a command listing.
var commandLineRE = regexp.MustCompile(`(?m)^  ([a-z-]+) +\S.*\n`)

// listed names the top-level commands a tool's root help lists.
func listed(help string) map[string]bool {
	out := map[string]bool{}
	for _, m := range commandLineRE.FindAllStringSubmatch(help, -1) {
		out[m[1]] = true
	}
	return out
}

// normaliseHelp compares help and usage text in full (normalise cuts
// usage off): the tools' names are unified, and the commands cairnctl
// does not have (completion) are dropped
// from etcdctl's listings.
func normaliseHelp(r result, missing map[string]bool) string {
	s := fmt.Sprintf("exit %d\n--- stdout\n%s\n--- stderr\n%s", r.exit, r.stdout, r.stderr)
	s = strings.ReplaceAll(s, "etcdctl", "cairnctl")
	return commandLineRE.ReplaceAllStringFunc(s+"\n", func(line string) string {
		if missing[commandLineRE.FindStringSubmatch(line)[1]] {
			return ""
		}
		return line
	})
}

func TestHelp(t *testing.T) {
	m := &member{hostPort: "127.0.0.1:1", scratch: t.TempDir()}
	eRoot, cRoot := runTool(t, etcdctlBin, m, s("--help")), runTool(t, cairnctlBin, m, s("--help"))
	missing := listed(eRoot.stdout)
	for name := range listed(cRoot.stdout) {
		delete(missing, name)
	}
	delete(missing, "etcdctl") // the usage line names the tool itself
	if len(missing) > 1 || (len(missing) == 1 && !missing["completion"]) {
		t.Fatalf("cairnctl lists too few commands; missing %v (only completion may be)", missing)
	}
	for _, args := range [][]string{
		{}, {"--help"}, {"-h"}, {"help"}, {"help", "nosuch"}, {"help", "help"}, {"options"},
		{"wach"}, {"m"}, {"nosuch"}, {"--nosuch", "get"},
		{"watch", "--help"}, {"help", "watch"}, {"watch", "--nosuch"}, {"watch", "--rev", "x"}, {"watch", "--rev"},
		{"make-mirror", "--help"}, {"make-mirror", "--max-txn-ops=-1", "x"},
		{"check"}, {"check", "perf", "--help"}, {"check", "datascale", "-h"},
		{"downgrade"}, {"downgrade", "validate", "--help"}, {"downgrade", "cancel", "-h"},
		{"lease"}, {"lease", "foo"}, {"le", "gr", "--help"}, {"member", "--help"}, {"get", "--help"}, {"put", "-h"},
		{"get", "-x"}, {"get", "-w"},
		{"auth"}, {"user"}, {"role", "--help"}, {"user", "add", "--help"}, {"lock", "--help"}, {"elect", "-h"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			e, c := runTool(t, etcdctlBin, m, s(args...)), runTool(t, cairnctlBin, m, s(args...))
			if en, cn := normaliseHelp(e, missing), normaliseHelp(c, missing); en != cn {
				t.Errorf("outputs differ\n=== etcdctl:\n%s\n=== cairnctl:\n%s", en, cn)
			}
		})
	}
}
