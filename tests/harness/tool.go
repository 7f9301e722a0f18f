package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ToolRun is the outcome of one run of a command-line tool.
type ToolRun struct {
	Stdout, Stderr string
	Exit           int // the exit status; 0 for success
}

// Tool says how to run a command-line tool (etcdctl, cairnctl, etcdutl,
// cairnutl) against the servers under test.
type Tool struct {
	Env   []string // added to CleanEnv
	Stdin string
	// Timeout bounds the run (0: unbounded); a tool still running then is
	// killed and reported as an error, not as an exit status.
	Timeout time.Duration
}

// Run runs bin with args and returns what it printed and how it exited.
// The error is non-nil only when the tool could not be run to its end: it
// did not start, or outlived Timeout.
func (o Tool) Run(bin string, args ...string) (ToolRun, error) {
	ctx := context.Background()
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(CleanEnv(), o.Env...)
	cmd.Stdin = strings.NewReader(o.Stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := ToolRun{Stdout: out.String(), Stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return r, nil
	case ctx.Err() != nil:
		return r, fmt.Errorf("%s %q: no exit within %v (stderr %q)", bin, args, o.Timeout, r.Stderr)
	case errors.As(err, &exit):
		r.Exit = exit.ExitCode()
		return r, nil
	default:
		return r, fmt.Errorf("%s %q: %w", bin, args, err)
	}
}
