package ctl

import (
	"fmt"
	"slices"

	"github.com/cairnkv/cairn/pkg/completion"
)

func init() {
	register(&command{path: "completion", usage: "Generate completion script", run: completionCmd})
}

// completionTopic is the help of completion, etcdctl's text with cairn's
// own scripts (PowerShell is not offered).
var completionTopic = topic{
	path: "completion", use: "completion [bash|zsh|fish]", short: "Generate completion script", group: "utility",
	long: "To load completions:\n\nBash:\n\n  $ source <(cairnctl completion bash)\n\n" +
		"  # To load completions for each session, execute once:\n  $ cairnctl completion bash > /etc/bash_completion.d/cairnctl\n\n" +
		"Zsh:\n\n  # If shell completion is not already enabled in your environment,\n  # you will need to enable it.  You can execute the following once:\n\n" +
		"  $ echo \"autoload -U compinit; compinit\" >> ~/.zshrc\n\n" +
		"  # To load completions for each session, execute once:\n  $ cairnctl completion zsh > \"${fpath[1]}/_cairnctl\"\n\n" +
		"fish:\n\n  $ cairnctl completion fish | source\n\n" +
		"  # To load completions for each session, execute once:\n  $ cairnctl completion fish > ~/.config/fish/completions/cairnctl.fish\n",
}

func init() {
	topics = append(topics, completionTopic)
	topicByPath[completionTopic.path] = completionTopic
}

// completionCmd prints the completion script of the shell named by its
// argument, made from the same command tree help prints. Wrong arguments
// get cobra's errors, as etcdctl's completion does.
func completionCmd(c *cmdCtx) error {
	n, _ := buildTree().resolve([]string{"completion"})
	if len(c.args) != 1 {
		return usageError(c.stderr, n, fmt.Errorf("accepts 1 arg(s), received %d", len(c.args)))
	}
	if !slices.Contains(completion.Shells, c.args[0]) {
		return usageError(c.stderr, n, fmt.Errorf("invalid argument %q for %q", c.args[0], progName+" completion"))
	}
	return completion.Write(c.stdout, c.args[0], progName, completionTree(buildTree()))
}

// completionTree describes n and its subcommands with every flag each
// accepts, the global ones included.
func completionTree(n *node) *completion.Command {
	fs := n.localFlags()
	var g globals
	g.register(fs)
	out := &completion.Command{Name: n.name, Flags: completion.FlagsOf(fs)}
	for _, child := range n.children {
		out.Subs = append(out.Subs, completionTree(child))
	}
	return out
}
