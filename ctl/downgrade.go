package ctl

import (
	"context"
	"errors"

	"github.com/cairnkv/cairn/client"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

func init() {
	register(
		&command{path: "downgrade validate", usage: "Validate downgrade capability before starting downgrade", run: downgradeCmd(pb.DowngradeRequest_VALIDATE)},
		&command{path: "downgrade enable", usage: "Start a downgrade action to cluster", run: downgradeCmd(pb.DowngradeRequest_ENABLE)},
		&command{path: "downgrade cancel", usage: "Cancel the ongoing downgrade action to cluster", run: downgradeCmd(pb.DowngradeRequest_CANCEL)},
	)
}

// downgradeWords is what the simple format calls each action.
var downgradeWords = map[pb.DowngradeRequest_DowngradeAction]string{
	pb.DowngradeRequest_VALIDATE: "validate",
	pb.DowngradeRequest_ENABLE:   "enable",
	pb.DowngradeRequest_CANCEL:   "cancel",
}

// downgradeTarget checks the arguments of validate and enable, which take
// exactly one non-empty target version.
func downgradeTarget(args []string) (string, error) {
	switch {
	case len(args) < 1:
		return "", fail(exitBadArgs, "TARGET_VERSION not provided")
	case len(args) > 1:
		return "", fail(exitBadArgs, "too many arguments")
	case args[0] == "":
		return "", fail(exitBadArgs, "target version not provided")
	}
	return args[0], nil
}

func downgradeCmd(action pb.DowngradeRequest_DowngradeAction) func(*cmdCtx) error {
	return func(c *cmdCtx) error {
		var target string
		if action != pb.DowngradeRequest_CANCEL {
			var err error
			if target, err = downgradeTarget(c.args); err != nil {
				return err
			}
		}
		return c.withClient(func(ctx context.Context, cl *client.Client) error {
			// The Go client has no Downgrade call; the RPC is etcd's.
			r, err := pb.NewMaintenanceClient(cl.ActiveConnection()).Downgrade(ctx, &pb.DowngradeRequest{Action: action, Version: target})
			if err != nil {
				return fail(exitError, "%v", rpcErr(ctx, err))
			}
			return c.p.downgrade(downgradeWords[action], r)
		})
	}
}

// rpcErr turns a gRPC error into the error etcd's client reports: the
// server's message for etcd errors, the context's error when it ended.
func rpcErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return ctx.Err()
	}
	return rpctypes.Error(err)
}

func (p *printer) downgrade(word string, r *pb.DowngradeResponse) error {
	return p.show(shown{
		simple: func() { p.printf("Downgrade %s success, cluster version %s\n", word, r.GetVersion()) },
		json:   r, pb: r,
	})
}
