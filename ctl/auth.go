package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/cairnkv/cairn/client"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// The auth, user and role commands, and the credentials of --user,
// --password and --auth-jwt-token.

func init() {
	register(
		&command{path: "auth enable", usage: "Enables authentication", run: authEnableCmd},
		&command{path: "auth disable", usage: "Disables authentication", run: authDisableCmd},
		&command{path: "auth status", usage: "Returns authentication status",
			run: listing("auth status command does not accept any arguments", (*client.Client).AuthStatus, (*printer).authStatus)},
		&command{path: "user add", usage: "Adds a new user", flags: userAddFlags, run: userAddCmd},
		&command{path: "user delete", usage: "Deletes a user",
			run: nameChange("user delete command requires user name as its argument", (*client.Client).UserDelete, "User %s deleted")},
		&command{path: "user get", usage: "Gets detailed information of a user", flags: func(fs *flag.FlagSet, o *opts) {
			fs.BoolVar(&o.detail, "detail", false, "Show permissions of roles granted to the user")
		}, run: userGetCmd},
		&command{path: "user list", usage: "Lists all users",
			run: listing("user list command requires no arguments", (*client.Client).UserList, (*printer).userList)},
		&command{path: "user passwd", usage: "Changes password of user", flags: func(fs *flag.FlagSet, o *opts) {
			fs.BoolVar(&o.interactive, "interactive", true, "If true, read password from stdin instead of interactive terminal")
		}, run: userPasswdCmd},
		&command{path: "user grant-role", usage: "Grants a role to a user",
			run: roleChange("user grant command requires user name and role name as its argument", (*client.Client).UserGrantRole, "Role %s is granted to user %s")},
		&command{path: "user revoke-role", usage: "Revokes a role from a user",
			run: roleChange("user revoke-role requires user name and role name as its argument", (*client.Client).UserRevokeRole, "Role %s is revoked from user %s")},
		&command{path: "role add", usage: "Adds a new role",
			run: nameChange("role add command requires role name as its argument", (*client.Client).RoleAdd, "Role %s created")},
		&command{path: "role delete", usage: "Deletes a role",
			run: nameChange("role delete command requires role name as its argument", (*client.Client).RoleDelete, "Role %s deleted")},
		&command{path: "role get", usage: "Gets detailed information of a role", run: roleGetCmd},
		&command{path: "role list", usage: "Lists all roles",
			run: listing("role list command requires no arguments", (*client.Client).RoleList, (*printer).roleList)},
		&command{path: "role grant-permission", usage: "Grants a key to a role", flags: permFlags("grant"), run: roleGrantCmd},
		&command{path: "role revoke-permission", usage: "Revokes a key from a role", flags: permFlags("revoke"), run: roleRevokeCmd},
	)
}

// credentials sets cfg's credentials from the global flags as etcdctl
// does: a JWT wins over a user; --password, else "user:password", else the
// password is asked for.
func (c *cmdCtx) credentials(cfg *client.Config) error {
	if c.g.token != "" {
		cfg.Token = c.g.token
		return nil
	}
	return c.userCredentials(cfg, c.g.user, c.g.password)
}

// userCredentials sets cfg's username and password from a
// "user[:password]" flag and a separate password flag, asking for the
// password when neither gives it.
func (c *cmdCtx) userCredentials(cfg *client.Config, userFlag, passwordFlag string) error {
	switch {
	case userFlag == "":
	case passwordFlag != "":
		cfg.Username, cfg.Password = userFlag, passwordFlag
	default:
		user, password, ok := strings.Cut(userFlag, ":")
		if !ok {
			var err error
			if password, err = c.askPassword("Password: "); err != nil {
				return fail(exitError, "%v", err)
			}
		}
		cfg.Username, cfg.Password = user, password
	}
	return nil
}

// askPassword prompts on stdout and reads a line from stdin with the
// terminal's echo off. Like etcdctl it uses stty for the echo, so when
// stdin is no terminal the password is still read, after stty's complaint.
func (c *cmdCtx) askPassword(prompt string) (string, error) {
	fmt.Fprint(c.stdout, prompt)
	defer fmt.Fprintln(c.stdout)
	c.stty("-echo")
	defer c.stty("echo")
	var line []byte
	b := make([]byte, 1)
	for {
		// One byte at a time: what follows the line is left for others.
		n, err := c.stdin.Read(b)
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("failed during password entry: %s", err)
		}
		if n == 0 || b[0] == '\n' {
			break
		}
		line = append(line, b[0])
	}
	return strings.TrimSpace(strings.TrimSuffix(string(line), "\r")), nil
}

// stty runs stty on the process's own terminal; tests that give cairnctl
// other streams have no terminal to change.
func (c *cmdCtx) stty(arg string) {
	in, ok := c.stdin.(*os.File)
	if !ok {
		return
	}
	cmd := exec.Command("stty", arg)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, c.stdout, c.stderr
	_ = cmd.Run()
}

func noArgs(c *cmdCtx, what string) error {
	return c.wantArgs(0, what+" command does not accept any arguments")
}

// authEnableCmd enables auth; like etcdctl it first creates the root role
// and grants it to root when the server says the role is missing.
func authEnableCmd(c *cmdCtx) error {
	if err := noArgs(c, "auth enable"); err != nil {
		return err
	}
	return c.withClient(func(ctx context.Context, cl *client.Client) error {
		for {
			_, err := cl.AuthEnable(ctx)
			if err == nil {
				fmt.Fprintln(c.stdout, "Authentication Enabled")
				return nil
			}
			if !errors.Is(err, rpctypes.ErrRootRoleNotExist) {
				return err
			}
			if _, err := cl.RoleAdd(ctx, rootRole); err != nil {
				return err
			}
			if _, err := cl.UserGrantRole(ctx, "root", rootRole); err != nil {
				return err
			}
		}
	})
}

func authDisableCmd(c *cmdCtx) error {
	if err := noArgs(c, "auth disable"); err != nil {
		return err
	}
	return c.withClient(func(ctx context.Context, cl *client.Client) error {
		if _, err := cl.AuthDisable(ctx); err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, "Authentication Disabled")
		return nil
	})
}

func userAddFlags(fs *flag.FlagSet, o *opts) {
	fs.BoolVar(&o.interactive, "interactive", true, "Read password from stdin instead of interactive terminal")
	fs.StringVar(&o.newUserPassword, "new-user-password", "", "Supply password from the command line flag")
	fs.BoolVar(&o.noPassword, "no-password", false, "Create a user without password (CN based auth only)")
}

// newUserPassword finds the user name and password of user add the ways
// etcdctl does: --no-password, --new-user-password, "user:password",
// stdin (--interactive=false) or a prompt.
func (c *cmdCtx) newUserPassword(arg string) (user, password string, err error) {
	switch {
	case c.o.noPassword:
		return arg, "", nil
	case c.o.newUserPassword != "":
		return arg, c.o.newUserPassword, nil
	}
	user, password, ok := strings.Cut(arg, ":")
	switch {
	case ok && user == "":
		return "", "", fail(exitBadArgs, "empty user name is not allowed")
	case ok:
		return user, password, nil
	case !c.o.interactive:
		password = c.scanPassword()
		return arg, password, nil
	}
	password, err = c.confirmPassword(arg)
	return arg, password, err
}

// scanPassword reads the first word of stdin (--interactive=false).
func (c *cmdCtx) scanPassword() string {
	var password string
	_, _ = fmt.Fscanf(c.stdin, "%s", &password) // no word: an empty password, as with etcdctl
	return password
}

// confirmPassword asks for a new password twice.
func (c *cmdCtx) confirmPassword(name string) (string, error) {
	first, err := c.askPassword(fmt.Sprintf("Password of %s: ", name))
	if err != nil {
		return "", fail(exitBadArgs, "failed to ask password: %w", err)
	}
	if first == "" {
		return "", fail(exitBadArgs, "empty password")
	}
	again, err := c.askPassword(fmt.Sprintf("Type password of %s again for confirmation: ", name))
	if err != nil {
		return "", fail(exitBadArgs, "failed to ask password: %w", err)
	}
	if first != again {
		return "", fail(exitBadArgs, "given passwords are different")
	}
	return first, nil
}

func userAddCmd(c *cmdCtx) error {
	if err := c.wantArgs(1, "user add command requires user name as its argument"); err != nil {
		return err
	}
	user, password, err := c.newUserPassword(c.args[0])
	if err != nil {
		return err
	}
	return authChange(c, func(ctx context.Context, cl *client.Client) (*client.AuthUserAddResponse, error) {
		return cl.UserAddWithOptions(ctx, user, password, &client.UserAddOptions{NoPassword: c.o.noPassword})
	}, fmt.Sprintf("User %s created", user))
}

// userGetCmd prints a user's roles; with --detail, each role's permissions
// under a "User:" line that every format gets, as with etcdctl.
func userGetCmd(c *cmdCtx) error {
	if err := c.wantArgs(1, "user get command requires user name as its argument"); err != nil {
		return err
	}
	name := c.args[0]
	return c.withClient(func(ctx context.Context, cl *client.Client) error {
		r, err := cl.UserGet(ctx, name)
		if err != nil {
			return err
		}
		if !c.o.detail {
			return c.p.userGet(name, r)
		}
		fmt.Fprintf(c.stdout, "User: %s\n", name)
		for _, role := range r.GetRoles() {
			fmt.Fprintln(c.stdout)
			rr, err := cl.RoleGet(ctx, role)
			if err != nil {
				return err
			}
			if err := c.p.roleGet(role, rr); err != nil {
				return err
			}
		}
		return nil
	})
}

func userPasswdCmd(c *cmdCtx) error {
	if err := c.wantArgs(1, "user passwd command requires user name as its argument"); err != nil {
		return err
	}
	var password string
	if c.o.interactive {
		var err error
		if password, err = c.confirmPassword(c.args[0]); err != nil {
			return err
		}
	} else {
		password = c.scanPassword()
	}
	return authChange(c, func(ctx context.Context, cl *client.Client) (*client.AuthUserChangePasswordResponse, error) {
		return cl.UserChangePassword(ctx, c.args[0], password)
	}, "Password updated")
}

func roleGetCmd(c *cmdCtx) error {
	if err := c.wantArgs(1, "role get command requires role name as its argument"); err != nil {
		return err
	}
	role := c.args[0]
	return request(c, func(ctx context.Context, cl *client.Client) (*client.AuthRoleGetResponse, error) {
		return cl.RoleGet(ctx, role)
	}, func(r *client.AuthRoleGetResponse) error { return c.p.roleGet(role, r) })
}

func permFlags(verb string) func(fs *flag.FlagSet, o *opts) {
	return func(fs *flag.FlagSet, o *opts) {
		fs.BoolVar(&o.prefix, "prefix", false, verb+" a prefix permission")
		fs.BoolVar(&o.fromKey, "from-key", false, verb+" a permission of keys that are greater than or equal to the given key using byte compare")
	}
}

func roleGrantCmd(c *cmdCtx) error {
	if len(c.args) < 3 {
		return fail(exitBadArgs, "role grant command requires role name, permission type, and key [endkey] as its argument")
	}
	perm, err := client.StrToPermissionType(c.args[1])
	if err != nil {
		return fail(exitBadArgs, "%v", err)
	}
	key, end, err := permRange(c.o, c.args[2:])
	if err != nil {
		return err
	}
	return authChange(c, func(ctx context.Context, cl *client.Client) (*client.AuthRoleGrantPermissionResponse, error) {
		return cl.RoleGrantPermission(ctx, c.args[0], key, end, perm)
	}, fmt.Sprintf("Role %s updated", c.args[0]))
}

func roleRevokeCmd(c *cmdCtx) error {
	if len(c.args) < 2 {
		return fail(exitBadArgs, "role revoke-permission command requires role name and key [endkey] as its argument")
	}
	key, end, err := permRange(c.o, c.args[1:])
	if err != nil {
		return err
	}
	// etcdctl names the key as typed, even an empty one it sent as "\x00".
	return authChange(c, func(ctx context.Context, cl *client.Client) (*client.AuthRoleRevokePermissionResponse, error) {
		return cl.RoleRevokePermission(ctx, c.args[0], key, end)
	}, revokedPermission(c.args[0], c.args[1], end))
}

// permRange turns "<key> [endkey]" and --prefix/--from-key into the key
// and range end of a permission. An empty key means every key: the server
// reads "\x00" as the start of the keyspace and as "no end".
func permRange(o *opts, args []string) (key, end string, err error) {
	const exclusive = "--from-key and --prefix flags are mutually exclusive"
	key = args[0]
	switch {
	case key == "" && o.prefix && o.fromKey:
		return "", "", fail(exitBadArgs, exclusive)
	case key == "" && (o.prefix || o.fromKey):
		return "\x00", "\x00", nil
	case key == "":
		return "\x00", "", nil
	case len(args) == 1 && o.prefix && o.fromKey:
		return "", "", fail(exitBadArgs, exclusive)
	case len(args) == 1 && o.prefix:
		return key, client.GetPrefixRangeEnd(key), nil
	case len(args) == 1 && o.fromKey:
		return key, "\x00", nil
	case len(args) == 1:
		return key, "", nil
	case o.prefix:
		return "", "", fail(exitBadArgs, "unexpected endkey argument with --prefix flag")
	case o.fromKey:
		return "", "", fail(exitBadArgs, "unexpected endkey argument with --from-key flag")
	}
	return key, args[1], nil
}
