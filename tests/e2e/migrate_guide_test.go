package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// migrationGuide is the procedure of docs/migrating-from-etcd.md: the
// command lines of its first sh block, split into words as the shell
// splits them, step by step. TestMigrateFromEtcd runs them, so the guide
// and the test cannot drift apart: a changed procedure fails the test
// until the test follows it.
type migrationGuide struct {
	endpoints  string   // ETCDCTL_ENDPOINTS: the old members
	add        []string // cairnctl member add ... --learner
	start      []string // cairn ... --initial-cluster-state existing
	promote    []string // cairnctl member promote
	newEPs     string   // ETCDCTL_ENDPOINTS without the old member
	moveLeader []string // cairnctl move-leader
	remove     []string // cairnctl member remove
}

const migrationGuidePath = "docs/migrating-from-etcd.md"

// The guide's example: members m1, m2 and m3 on 10.0.0.1 to 10.0.0.3, m1
// (the first) being replaced by c1 on 10.0.0.4; client port 2379, peer
// port 2380; IDs are placeholders.
const (
	guideNewName  = "c1"
	guideNewID    = "<c1's member ID>"
	guideOldID    = "<m1's member ID>"
	guideHostPart = "10.0.0."
)

func guideClientURL(k int) string { return fmt.Sprintf("http://%s%d:2379", guideHostPart, k) }
func guidePeerURL(k int) string   { return fmt.Sprintf("http://%s%d:2380", guideHostPart, k) }

func readMigrationGuide(t *testing.T) migrationGuide {
	t.Helper()
	blocks := shellBlocks(t, filepath.Join("..", "..", migrationGuidePath))
	g, err := parseMigrationGuide(blocks[0])
	if err != nil {
		t.Fatalf("%s: %v; TestMigrateFromEtcd must follow the guide", migrationGuidePath, err)
	}
	return g
}

// parseMigrationGuide reads the procedure from the guide's sh block.
func parseMigrationGuide(block string) (migrationGuide, error) {
	var g migrationGuide
	var export, reexport []string
	steps := []struct {
		prefix []string
		dst    *[]string
	}{
		{[]string{"export"}, &export},
		{[]string{"cairnctl", "member", "add"}, &g.add},
		{[]string{"cairn"}, &g.start},
		{[]string{"cairnctl", "member", "promote"}, &g.promote},
		{[]string{"export"}, &reexport},
		{[]string{"cairnctl", "move-leader"}, &g.moveLeader},
		{[]string{"cairnctl", "member", "remove"}, &g.remove},
	}
	cmds, err := commandLines(block)
	if err != nil {
		return g, err
	}
	if len(cmds) != len(steps) {
		return g, fmt.Errorf("%d commands in the procedure, the test knows %d: %q", len(cmds), len(steps), cmds)
	}
	for i, s := range steps {
		if len(cmds[i]) < len(s.prefix) || !slices.Equal(cmds[i][:len(s.prefix)], s.prefix) {
			return g, fmt.Errorf("command %d is %q, the test expects %q", i+1, cmds[i], strings.Join(s.prefix, " "))
		}
		*s.dst = cmds[i]
	}
	for _, e := range []struct {
		cmd []string
		dst *string
	}{{export, &g.endpoints}, {reexport, &g.newEPs}} {
		v, ok := strings.CutPrefix(strings.Join(e.cmd[1:], " "), "ETCDCTL_ENDPOINTS=")
		if len(e.cmd) != 2 || !ok {
			return g, fmt.Errorf("%q is not an export of ETCDCTL_ENDPOINTS", e.cmd)
		}
		*e.dst = v
	}
	return g, nil
}

// commandLines returns the commands of a shell block: comments and blank
// lines dropped, continued lines joined, each split into words. A
// placeholder such as <c1's member ID> is one word.
func commandLines(block string) ([][]string, error) {
	var cmds [][]string
	cur := ""
	for _, line := range strings.Split(block, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur += cont + " "
			continue
		}
		words, err := shellWords(cur + trimmed)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, words)
		cur = ""
	}
	if cur != "" {
		return nil, fmt.Errorf("the block ends in a continued line: %q", cur)
	}
	return cmds, nil
}

// shellWords splits a command line as the shell does for the guide's
// commands: words between blanks, double and single quotes removed, a
// <placeholder> kept whole. Nothing else of the shell is understood.
func shellWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			continue
		case ch == '"' || ch == '\'' || (ch == '<' && !inWord):
			end := byte(ch)
			if ch == '<' {
				end = '>'
			}
			j := strings.IndexByte(line[i+1:], end)
			if j < 0 {
				return nil, fmt.Errorf("unterminated %c in %q", ch, line)
			}
			if ch == '<' {
				w.WriteString(line[i : i+j+2])
			} else {
				w.WriteString(line[i+1 : i+1+j])
			}
			i += j + 1
		default:
			w.WriteByte(ch)
		}
		inWord = true
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// guideSubstitution puts the test's cluster in place of the guide's
// example: addresses, the new member's name and the member IDs.
type guideSubstitution struct {
	urls  *strings.Replacer
	words map[string]string // whole words: the name and the IDs
}

// substitution maps the guide's m1 to member old, m2 and m3 to the other
// live members and c1 to m.
func (mg *migration) substitution(old int, m *member) guideSubstitution {
	c := mg.c
	others := slices.DeleteFunc(mg.live(), func(i int) bool { return i == old })
	return newGuideSubstitution([]*member{c.members[old], c.members[others[0]], c.members[others[1]], m}, c.ids[old])
}

// newGuideSubstitution maps the guide's members 1 to 4 to ms (the last
// being the new one); oldID is the first one's member ID.
func newGuideSubstitution(ms []*member, oldID uint64) guideSubstitution {
	var pairs []string
	for k, mm := range ms {
		pairs = append(pairs, guideClientURL(k+1), mm.clientURL, guidePeerURL(k+1), mm.peerURL)
	}
	return guideSubstitution{
		urls:  strings.NewReplacer(pairs...),
		words: map[string]string{guideNewName: ms[len(ms)-1].name, guideOldID: fmt.Sprintf("%x", oldID)},
	}
}

// word substitutes one word.
func (s guideSubstitution) word(w string) string {
	if v, ok := s.words[w]; ok {
		return v
	}
	return s.urls.Replace(w)
}

// command substitutes every word of a command; none may be left naming
// the example's machines.
func (s guideSubstitution) command(t *testing.T, words []string) []string {
	t.Helper()
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = s.word(w)
		if strings.Contains(out[i], guideHostPart) {
			t.Fatalf("%s: %q in %q names an address the test does not map", migrationGuidePath, w, words)
		}
	}
	return out
}

// endpointsEnv is the environment of the guide's export of
// ETCDCTL_ENDPOINTS=eps.
func (s guideSubstitution) endpointsEnv(t *testing.T, eps string) []string {
	t.Helper()
	return []string{"ETCDCTL_ENDPOINTS=" + s.command(t, []string{eps})[0]}
}

func TestShellWords(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"cairnctl member add c1 --learner", []string{"cairnctl", "member", "add", "c1", "--learner"}},
		{`--initial-cluster "a=x,b=y"  --x`, []string{"--initial-cluster", "a=x,b=y", "--x"}},
		{`a'b c'd "e"`, []string{"ab cd", "e"}},
		{"cairnctl member promote <c1's member ID>", []string{"cairnctl", "member", "promote", "<c1's member ID>"}},
		{"x a<b", []string{"x", "a<b"}},
	}
	for _, tt := range tests {
		got, err := shellWords(tt.line)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("shellWords(%q) = %q, %v; want %q", tt.line, got, err, tt.want)
		}
	}
	if _, err := shellWords(`a "b`); err == nil {
		t.Error("an unterminated quote: no error")
	}
}

func TestParseMigrationGuide(t *testing.T) {
	block := `export ETCDCTL_ENDPOINTS=http://10.0.0.1:2379

# a comment
cairnctl member add c1 --learner --peer-urls=http://10.0.0.4:2380
cairn --name c1 \
  --initial-cluster "m1=http://10.0.0.1:2380,c1=http://10.0.0.4:2380" \
  --initial-cluster-state existing
cairnctl member promote <c1's member ID>
export ETCDCTL_ENDPOINTS=http://10.0.0.4:2379
cairnctl move-leader <c1's member ID> --endpoints http://10.0.0.1:2379
cairnctl member remove <m1's member ID>`
	g, err := parseMigrationGuide(block)
	if err != nil {
		t.Fatal(err)
	}
	if g.endpoints != "http://10.0.0.1:2379" || g.newEPs != "http://10.0.0.4:2379" || len(g.start) != 7 || g.start[4] != "m1=http://10.0.0.1:2380,c1=http://10.0.0.4:2380" || g.remove[3] != guideOldID {
		t.Errorf("parsed %+v", g)
	}
	for name, b := range map[string]string{
		"a step missing":  strings.Replace(block, "cairnctl move-leader", "# cairnctl move-leader", 1),
		"a step added":    block + "\ncairnctl endpoint health",
		"steps reordered": strings.Replace(block, "cairnctl member promote", "cairnctl member remove", 1),
		"no export":       strings.Replace(block, "export ETCDCTL_ENDPOINTS=", "export ENDPOINTS=", 1),
		"no re-export":    strings.Replace(block, "export ETCDCTL_ENDPOINTS=http://10.0.0.4", "export X=http://10.0.0.4", 1),
	} {
		if _, err := parseMigrationGuide(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestMigrationGuideReadable reads the guide's procedure and maps its
// addresses even where TestMigrateFromEtcd skips (no etcd): a changed
// guide fails here first.
func TestMigrationGuideReadable(t *testing.T) {
	g := readMigrationGuide(t)
	var ms []*member
	for k := range 4 {
		ms = append(ms, &member{name: fmt.Sprint("n", k), clientURL: fmt.Sprint("http://c", k), peerURL: fmt.Sprint("http://p", k)})
	}
	sub := newGuideSubstitution(ms, 0xa1)
	sub.endpointsEnv(t, g.endpoints)
	sub.endpointsEnv(t, g.newEPs)
	for _, cmd := range [][]string{g.add, g.start, g.promote, g.moveLeader, g.remove} {
		sub.command(t, cmd) // fails on an address it does not map
	}
	if !slices.Contains(g.start, "--initial-cluster") || !slices.Contains(g.start, "--data-dir") {
		t.Errorf("the start command %q lacks --initial-cluster or --data-dir, which the test sets", g.start)
	}
}
