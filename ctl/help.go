package ctl

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// progName is the name help and usage messages print where etcdctl
// prints its own.
const progName = "cairnctl"

const rootShort = "A simple command line client for etcd3."

const optionsPrompt = `Use "` + progName + ` options" for a list of global command-line options (applies to all commands).` + "\n"

// node is one command of the tree that help prints: a registered command
// (a leaf with behaviour), a parent that only groups subcommands, or the
// root.
type node struct {
	name     string
	path     string
	topic    topic
	cmd      *command // nil for the root, parents and help
	parent   *node
	children []*node
}

var topicByPath = func() map[string]topic {
	m := make(map[string]topic, len(topics))
	for _, t := range topics {
		m[t.path] = t
	}
	return m
}()

// buildTree arranges the registered commands, plus help, the way
// etcdctl's cobra tree is arranged, children sorted by name.
func buildTree() *node {
	root := &node{topic: topic{use: progName, short: rootShort}}
	all := append([]*command{{path: "help"}}, commands...)
	for _, c := range all {
		n := root
		for _, w := range strings.Fields(c.path) {
			n = n.child(w)
		}
		if c.run != nil {
			n.cmd = c
		}
		if n.topic.short == "" {
			n.topic.short = c.usage
		}
	}
	root.sortChildren()
	return root
}

func (n *node) child(name string) *node {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	path := strings.TrimSpace(n.path + " " + name)
	t, ok := topicByPath[path]
	if !ok {
		t = topic{path: path, use: name}
	}
	c := &node{name: name, path: path, topic: t, parent: n}
	n.children = append(n.children, c)
	return c
}

func (n *node) sortChildren() {
	sort.Slice(n.children, func(i, j int) bool { return n.children[i].name < n.children[j].name })
	for _, c := range n.children {
		c.sortChildren()
	}
}

// resolve follows the command words in pos from n, accepting a unique
// prefix of a name as cobra does with prefix matching enabled. It returns
// the deepest command found and how many words named it.
func (n *node) resolve(pos []string) (*node, int) {
	used := 0
	for used < len(pos) {
		next := n.find(pos[used])
		if next == nil {
			break
		}
		n = next
		used++
	}
	return n, used
}

func (n *node) find(word string) *node {
	var match *node
	count := 0
	for _, c := range n.children {
		if c.name == word {
			return c
		}
		if strings.HasPrefix(c.name, word) {
			match = c
			count++
		}
	}
	if count == 1 {
		return match
	}
	return nil
}

func (n *node) commandPath() string {
	if n.parent == nil {
		return progName
	}
	return progName + " " + n.path
}

func (n *node) runnable() bool { return n.cmd != nil || (n.name == "help" && n.parent.parent == nil) }

// localFlags is the flag set a command's help lists: its own flags and
// -h/--help, without the (hidden) global flags.
func (n *node) localFlags() *flag.FlagSet {
	fs := flag.NewFlagSet(n.path, flag.ContinueOnError)
	if n.cmd != nil && n.cmd.flags != nil {
		n.cmd.flags(fs, &opts{})
	}
	registerHelp(fs, n)
	return fs
}

func registerHelp(fs *flag.FlagSet, n *node) {
	name := n.name
	if n.parent == nil {
		name = progName
	}
	var h bool
	fs.BoolVar(&h, "help", false, "help for "+name)
	fs.BoolVar(&h, "h", false, "shorthand for --help")
}

// helpText is cobra's help: the long (or short) description, then usage.
func (n *node) helpText() string {
	var b strings.Builder
	desc := n.topic.long
	if desc == "" {
		desc = n.topic.short
	}
	if desc = strings.TrimRight(desc, " \t\n"); desc != "" {
		b.WriteString(desc + "\n\n")
	}
	b.WriteString(n.usageText())
	b.WriteString(optionsPrompt)
	return b.String()
}

// usageText is cobra's default usage template filled in for n.
func (n *node) usageText() string {
	var b strings.Builder
	b.WriteString("Usage:")
	if n.runnable() {
		b.WriteString("\n  " + n.useLine())
	}
	if len(n.children) > 0 {
		b.WriteString("\n  " + n.commandPath() + " [command]")
		if n.parent == nil {
			n.groupedCommands(&b)
		} else {
			b.WriteString("\n\nAvailable Commands:")
			n.commandList(&b, func(*node) bool { return true })
		}
	}
	if n.parent != nil {
		b.WriteString("\n\nFlags:\n" + strings.TrimRight(flagUsages(n.localFlags(), nil), " \t\n"))
	}
	if len(n.children) > 0 {
		b.WriteString("\n\nUse \"" + n.commandPath() + " [command] --help\" for more information about a command.")
	}
	b.WriteString("\n")
	return b.String()
}

func (n *node) useLine() string {
	prefix := progName
	if n.parent != nil && n.parent.parent != nil {
		prefix = n.parent.commandPath()
	}
	use := prefix + " " + n.topic.use
	if !strings.Contains(use, "[flags]") {
		use += " [flags]"
	}
	return use
}

func (n *node) groupedCommands(b *strings.Builder) {
	for _, g := range helpGroups {
		b.WriteString("\n\n" + g.title)
		n.commandList(b, func(c *node) bool { return c.topic.group == g.id })
	}
	var rest bool
	for _, c := range n.children {
		rest = rest || c.topic.group == ""
	}
	if rest {
		b.WriteString("\n\nAdditional Commands:")
		n.commandList(b, func(c *node) bool { return c.topic.group == "" })
	}
}

func (n *node) commandList(b *strings.Builder, keep func(*node) bool) {
	pad := 11 // cobra's minimum name padding
	for _, c := range n.children {
		pad = max(pad, len(c.name))
	}
	for _, c := range n.children {
		if keep(c) {
			fmt.Fprintf(b, "\n  %-*s %s", pad, c.name, c.topic.short)
		}
	}
}

// shorthands maps a flag's name to its one-letter shorthand. cairnctl
// registers a shorthand as its own flag whose usage is "shorthand for
// --name".
func shorthands(fs *flag.FlagSet) map[string]string {
	m := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if long, ok := strings.CutPrefix(f.Usage, "shorthand for --"); ok && len(f.Name) == 1 {
			m[long] = f.Name
		}
	})
	return m
}

// flagKind is the type name pflag prints for a flag's value ("" for
// booleans) and whether def is that type's zero value.
func flagKind(f *flag.Flag) (kind string, zero bool) {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "string", f.DefValue == ""
	}
	switch g.Get().(type) {
	case bool:
		return "", f.DefValue == "false"
	case int, int64:
		return "int", f.DefValue == "0"
	case uint, uint64:
		return "uint", f.DefValue == "0"
	case float64:
		return "float", f.DefValue == "0"
	case fmt.Stringer: // time.Duration
		return "duration", f.DefValue == "0s"
	}
	return "string", f.DefValue == ""
}

// flagUsages lists the flags of fs in pflag's format: sorted by name,
// shorthand first, descriptions aligned in one column. kinds overrides
// the printed type of a flag.
func flagUsages(fs *flag.FlagSet, kinds map[string]string) string {
	short := shorthands(fs)
	var lines []string
	width := 0
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) == 1 && strings.HasPrefix(f.Usage, "shorthand for --") {
			return
		}
		line := "      --" + f.Name
		if s := short[f.Name]; s != "" {
			line = "  -" + s + ", --" + f.Name
		}
		kind, zero := flagKind(f)
		def := f.DefValue
		if k, ok := kinds[f.Name]; ok {
			kind, def = k, "["+def+"]"
		}
		if kind != "" {
			line += " " + kind
		}
		line += "\x00"
		width = max(width, len(line))
		line += f.Usage
		switch {
		case zero:
		case kind == "string":
			line += fmt.Sprintf(" (default %q)", def)
		default:
			line += fmt.Sprintf(" (default %s)", def)
		}
		lines = append(lines, line)
	})
	var b strings.Builder
	for _, l := range lines {
		i := strings.IndexByte(l, 0)
		b.WriteString(l[:i] + strings.Repeat(" ", width-i+1) + " " + l[i+1:] + "\n")
	}
	return b.String()
}

// usageError prints a flag error as cobra does: the message, then the
// command's usage and a blank line, all on stderr; the exit status is 1.
func usageError(w io.Writer, n *node, err error) error {
	fmt.Fprintf(w, "Error: %v\n%s\n", err, n.usageText())
	return silent(exitError)
}

// unknownCommand is cobra's error for a word that names no command, with
// its suggestions.
func unknownCommand(w io.Writer, root *node, word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, progName)
	if s := root.suggest(word); len(s) > 0 {
		msg += "\n\nDid you mean this?\n"
		for _, name := range s {
			msg += "\t" + name + "\n"
		}
	}
	fmt.Fprintf(w, "Error: %s\nRun '%s --help' for usage.\n", msg, progName)
	return silent(exitError)
}

// suggest names the commands within edit distance 2 of word, or starting
// with it, as cobra's suggestions do.
func (n *node) suggest(word string) []string {
	var out []string
	lw := strings.ToLower(word)
	// cobra suggests in registration order, which the topics table keeps.
	cs := append([]*node(nil), n.children...)
	rank := func(c *node) int {
		for i, t := range topics {
			if t.path == c.path {
				return i
			}
		}
		return len(topics)
	}
	sort.SliceStable(cs, func(i, j int) bool { return rank(cs[i]) < rank(cs[j]) })
	for _, c := range cs {
		if c.name == "help" {
			continue
		}
		if levenshtein(lw, strings.ToLower(c.name)) <= 2 || strings.HasPrefix(strings.ToLower(c.name), lw) {
			out = append(out, c.name)
		}
	}
	return out
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// helpCommand is `cairnctl help [command...]`.
func helpCommand(e env, root *node, topicWords []string) error {
	n, used := root.resolve(topicWords)
	if n == root && used < len(topicWords) {
		quoted := make([]string, len(topicWords))
		for i, w := range topicWords {
			quoted[i] = "`" + w + "`"
		}
		fmt.Fprintf(e.stderr, "Unknown help topic [%s]\n", strings.Join(quoted, " "))
		io.WriteString(e.stderr, root.usageText())
		return nil
	}
	io.WriteString(e.stdout, n.helpText())
	return nil
}

func init() {
	register(&command{path: "options", usage: "Show the global command-line flags", run: optionsCmd})
}

// optionsCmd lists the global flags, which every command's help hides.
func optionsCmd(c *cmdCtx) error {
	fs := flag.NewFlagSet("options", flag.ContinueOnError)
	var g globals
	g.register(fs)
	fmt.Fprintf(c.stdout, "The following options can be passed to any command:\n\n%s", flagUsages(fs, map[string]string{"endpoints": "strings"}))
	return nil
}
