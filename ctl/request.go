package ctl

import (
	"context"
	"fmt"
	"strconv"

	"github.com/cairnkv/cairn/client"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// Most commands are one request once their arguments are read: check the
// argument count, send the request, print the response. The helpers here
// hold that sequence once, so a command states only what differs (its
// usage message, its call, how its answer is printed).

// request sends do with a connected client and prints its response.
func request[R any](c *cmdCtx, do func(ctx context.Context, cl *client.Client) (R, error), print func(R) error) error {
	return c.withClient(func(ctx context.Context, cl *client.Client) error {
		r, err := do(ctx, cl)
		if err != nil {
			return err
		}
		return print(r)
	})
}

// wantArgs refuses a command line with other than n arguments with usage,
// etcdctl's message for that command.
func (c *cmdCtx) wantArgs(n int, usage string) error {
	if len(c.args) != n {
		return fail(exitBadArgs, "%s", usage)
	}
	return nil
}

// intArg is the command's one argument, an integer in base; usage is the
// message when there is not exactly one, and code and bad (a format of the
// parse error) the failure when it does not parse.
func (c *cmdCtx) intArg(usage string, base, code int, bad string) (int64, error) {
	if err := c.wantArgs(1, usage); err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(c.args[0], base, 64)
	if err != nil {
		return 0, fail(code, bad, err)
	}
	return v, nil
}

// listing is a command that takes no arguments and prints the response of
// one argument-less call.
func listing[R any](usage string, call func(*client.Client, context.Context) (R, error), print func(*printer, R) error) func(*cmdCtx) error {
	return func(c *cmdCtx) error {
		if err := c.wantArgs(0, usage); err != nil {
			return err
		}
		return request(c, func(ctx context.Context, cl *client.Client) (R, error) { return call(cl, ctx) },
			func(r R) error { return print(c.p, r) })
	}
}

// authResponse is the answer of a request that changes the auth store.
type authResponse interface {
	proto.Message
	GetHeader() *pb.ResponseHeader
}

// authChange sends do and prints its response with done, the line
// etcdctl's simple format reports the change with.
func authChange[R authResponse](c *cmdCtx, do func(ctx context.Context, cl *client.Client) (R, error), done string) error {
	return request(c, do, func(r R) error { return c.p.authResult(r, r.GetHeader(), done) })
}

// nameChange is a command that takes one name (of a user or a role) and
// changes it with call; done is the format of the line that reports the
// change, given the name.
func nameChange[R authResponse](usage string, call func(*client.Client, context.Context, string) (R, error), done string) func(*cmdCtx) error {
	return func(c *cmdCtx) error {
		if err := c.wantArgs(1, usage); err != nil {
			return err
		}
		name := c.args[0]
		return authChange(c, func(ctx context.Context, cl *client.Client) (R, error) { return call(cl, ctx, name) },
			fmt.Sprintf(done, name))
	}
}

// roleChange is a command that takes a user name and a role name and
// changes the user's roles with call; done is the format of the line that
// reports the change, given the role, then the user.
func roleChange[R authResponse](usage string, call func(*client.Client, context.Context, string, string) (R, error), done string) func(*cmdCtx) error {
	return func(c *cmdCtx) error {
		if err := c.wantArgs(2, usage); err != nil {
			return err
		}
		user, role := c.args[0], c.args[1]
		return authChange(c, func(ctx context.Context, cl *client.Client) (R, error) { return call(cl, ctx, user, role) },
			fmt.Sprintf(done, role, user))
	}
}

// memberResponse is the answer of a membership change.
type memberResponse interface {
	proto.Message
	GetHeader() *pb.ResponseHeader
	GetMembers() []*pb.Member
}

// memberChange is a command on the member whose ID (hex) is its argument:
// it calls call with the ID and reports "Member <id> <done> cluster <id>"
// as etcdctl does.
func memberChange[R memberResponse](call func(c *cmdCtx, ctx context.Context, cl *client.Client, id uint64) (R, error), done string) func(*cmdCtx) error {
	return func(c *cmdCtx) error {
		id, err := memberID(c.args)
		if err != nil {
			return err
		}
		return request(c, func(ctx context.Context, cl *client.Client) (R, error) { return call(c, ctx, cl, id) },
			func(r R) error {
				return c.p.memberChange(r, r.GetHeader(), r.GetMembers(),
					fmt.Sprintf("Member %16x %s cluster %16x", id, done, r.GetHeader().GetClusterId()))
			})
	}
}
