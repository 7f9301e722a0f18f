// Package completiontest drives generated completion scripts in real
// shells, for the tests of programs that use package completion.
package completiontest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Bash sources script in bash and calls the completion function of prog
// as bash does for the command line typed so far: words split on spaces,
// a trailing space starting a new, empty word. It returns the candidates
// offered. The test is skipped when bash is not installed.
func Bash(t *testing.T, prog, script, typed string) []string {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	file := writeScript(t, prog+".bash", script)
	words := strings.Split(typed, " ")
	var quoted []string
	for _, w := range words {
		quoted = append(quoted, "'"+w+"'")
	}
	fn := "_" + strings.ReplaceAll(prog, "-", "_")
	body := fmt.Sprintf("source %q\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\nCOMP_LINE=%q\nCOMP_POINT=${#COMP_LINE}\n%s\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n",
		file, strings.Join(quoted, " "), len(words)-1, typed, fn)
	return strings.Fields(run(t, "bash", "--norc", "--noprofile", "-c", body))
}

// Fish loads script in fish and asks fish's own completer (complete -C)
// for the command line typed so far. It returns the candidates without
// their descriptions. The test is skipped when fish is not installed.
func Fish(t *testing.T, prog, script, typed string) []string {
	t.Helper()
	if _, err := exec.LookPath("fish"); err != nil {
		t.Skip("fish is not installed")
	}
	file := writeScript(t, prog+".fish", script)
	out := run(t, "fish", "--no-config", "-c", fmt.Sprintf("source %q; complete -C %q", file, typed))
	var words []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if w, _, _ := strings.Cut(line, "\t"); w != "" {
			words = append(words, w)
		}
	}
	return words
}

// ZshParses checks that zsh accepts script's syntax (zsh -n). Skipped when
// zsh is not installed.
func ZshParses(t *testing.T, prog, script string) {
	t.Helper()
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Skip("zsh is not installed")
	}
	run(t, "zsh", "-n", writeScript(t, "_"+prog, script))
}

func writeScript(t *testing.T, name, script string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("%s: %v\n%s", name, err, stderr.String())
	}
	return string(out)
}
