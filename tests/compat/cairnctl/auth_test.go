package cairnctl

import (
	"strings"
	"testing"
)

// each makes one step per output format from mk(format); the step's
// args get "-w format" in front.
func each(mk func(f string) step, fs ...string) []step {
	var out []step
	for _, f := range fs {
		st := mk(f)
		st.args = append([]string{"-w", f}, st.args...)
		out = append(out, st)
	}
	return out
}

// as runs args as user (given as "user:password").
func as(user string, args ...string) []string {
	return append([]string{"--user=" + user}, args...)
}

// startAuthTwins starts twins for the auth tests, whose every step costs a
// bcrypt check (Authenticate) on each twin, run concurrently. On a loaded
// machine one tool could exceed etcdctl's default 2 s dial timeout (which
// bounds connecting and Authenticate) or 5 s command timeout while its twin
// did not: that step then failed, or was not applied, on one side only and
// the twins' auth states drifted apart (a missing revoke showed up later in
// "role get" and as an auth revision one lower in "auth status"). The
// cheapest bcrypt cost and generous timeouts, the same for both tools,
// keep the comparison about behaviour, not about scheduling.
func startAuthTwins(t *testing.T) twins {
	ms := startTwins(t, "--bcrypt-cost", "4")
	for _, m := range ms {
		m.toolEnv = []string{"ETCDCTL_DIAL_TIMEOUT=20s", "ETCDCTL_COMMAND_TIMEOUT=25s"}
	}
	return twins{ms}
}

func TestAuthUsersAndRoles(t *testing.T) {
	tw := startAuthTwins(t)
	tw.checkAll(t, cat(
		[]step{
			{args: []string{"auth", "enable"}, want: "root user does not exist"},
			{args: []string{"user", "add", "root", "--new-user-password=rootpw"}, want: "User root created"},
			s("user", "add"), s("user", "add", "a", "b"), {args: []string{"user", "add", ":pw"}, want: "empty user name"},
			{args: []string{"user", "add", "bob", "--interactive=false"}, stdin: "bobpw\n", want: "User bob created"},
			{args: []string{"user", "add", "carol"}, stdin: "carolpw\ncarolpw\n", want: "Password of carol"},
			{args: []string{"user", "add", "dave"}, stdin: "one\ntwo\n", want: "given passwords are different"},
			{args: []string{"user", "add", "erin"}, stdin: "\n", want: "empty password"},
			{args: []string{"user", "add", "nopass", "--no-password"}, want: "User nopass created"},
			{args: []string{"user", "add", "bob:other"}, want: "user name already exists"},
			{args: []string{"role", "add", "app"}, want: "Role app created"},
			{args: []string{"role", "add", "app"}, want: "role name already exists"},
			s("role", "add"),
		},
		each(func(f string) step { return s("user", "add", "u-"+f+":pw") }, all...),
		each(func(f string) step { return s("role", "add", "r-"+f) }, all...),
		[]step{
			s("role", "grant-permission", "app", "readwrite", "a/", "--prefix"),
			s("role", "grant-permission", "app", "read", "ro"),
			s("role", "grant-permission", "app", "write", "w", "x"),
			s("role", "grant-permission", "app", "READ", "z", "--from-key"),
			s("role", "grant-permission", "r-simple", "read", "", "--prefix"),
			s("role", "grant-permission", "r-json", "write", ""),
			s("role", "grant-permission", "r-fields", "readwrite", "\xff", "--prefix"),
			{args: []string{"role", "grant-permission", "app", "sideways", "k"}, want: "invalid permission type"},
			s("role", "grant-permission", "app", "read"),
			{args: []string{"role", "grant-permission", "app", "read", "k", "l", "--prefix"}, want: "unexpected endkey"},
			{args: []string{"role", "grant-permission", "app", "read", "k", "l", "--from-key"}, want: "unexpected endkey"},
			{args: []string{"role", "grant-permission", "app", "read", "k", "--prefix", "--from-key"}, want: "mutually exclusive"},
			{args: []string{"role", "grant-permission", "app", "read", "", "--prefix", "--from-key"}, want: "mutually exclusive"},
			{args: []string{"role", "grant-permission", "missing", "read", "k"}, want: "role name not found"},
		},
		each(func(f string) step { return s("role", "grant-permission", "r-"+f, "read", "k-"+f) }, all...),
		each(func(f string) step { return s("role", "get", "app") }, all...),
		each(func(f string) step { return s("role", "get", "r-"+f) }, "simple", "json", "fields"),
		each(func(f string) step { return s("role", "list") }, all...),
		[]step{
			{args: []string{"role", "get", "missing"}, want: "role name not found"},
			s("role", "get"), s("role", "list", "x"),
			{args: []string{"user", "grant-role", "bob", "app"}, want: "Role app is granted to user bob"},
			{args: []string{"user", "grant-role", "bob", "missing"}, want: "role name not found"},
			s("user", "grant-role", "bob"),
			s("user", "grant-role", "carol", "r-simple"),
			s("user", "grant-role", "carol", "r-json"),
		},
		each(func(f string) step { return s("user", "grant-role", "u-"+f, "app") }, all...),
		each(func(f string) step { return s("user", "revoke-role", "u-"+f, "app") }, all...),
		[]step{
			{args: []string{"user", "revoke-role", "bob", "r-json"}, want: "role is not granted"},
			s("user", "revoke-role", "bob"),
		},
		each(func(f string) step { return s("user", "get", "bob") }, all...),
		each(func(f string) step { return s("user", "get", "--detail", "carol") }, all...),
		each(func(f string) step { return s("user", "list") }, all...),
		[]step{
			{args: []string{"user", "get", "missing"}, want: "user name not found"},
			s("user", "get", "--detail", "nopass"), s("user", "get"), s("user", "list", "x"),
			{args: []string{"user", "passwd", "bob", "--interactive=false"}, stdin: "newbob\n", want: "Password updated"},
			{args: []string{"user", "passwd", "carol"}, stdin: "c2\nc2\n", want: "Password updated"},
			{args: []string{"user", "passwd", "carol"}, stdin: "c3\nc4\n", want: "given passwords are different"},
			s("user", "passwd"),
			{args: []string{"user", "passwd", "missing", "--interactive=false"}, stdin: "x\n", want: "user name not found"},
		},
		each(func(f string) step {
			return step{args: []string{"user", "passwd", "u-" + f, "--interactive=false"}, stdin: "pw2\n"}
		}, all...),
		each(func(f string) step { return s("auth", "status") }, all...),
		[]step{s("auth", "status", "x"), s("auth", "disable", "x"), s("auth", "enable", "x")},
	))
}

// authSetup creates root, alice (readwrite on a/, read on ro) and enables
// auth.
var authSetup = []step{
	s("user", "add", "root:rootpw"),
	s("user", "add", "alice:alicepw"),
	s("role", "add", "app"),
	s("role", "grant-permission", "app", "readwrite", "a/", "--prefix"),
	s("role", "grant-permission", "app", "read", "ro"),
	s("role", "grant-permission", "app", "read", "r1", "r9"),
	s("role", "grant-permission", "app", "read", "z", "--from-key"),
	s("user", "grant-role", "alice", "app"),
	s("user", "add", "nopass", "--no-password"),
	s("put", "ro", "v"),
	s("put", "secret", "s"),
	{args: []string{"auth", "enable"}, want: "Authentication Enabled"},
}

func TestAuthEnabled(t *testing.T) {
	tw := startAuthTwins(t)
	root := func(args ...string) []string { return as("root:rootpw", args...) }
	alice := func(args ...string) []string { return as("alice:alicepw", args...) }
	tw.checkAll(t, cat(
		authSetup,
		[]step{
			{args: root("role", "get", "root"), want: "<open ended>"},
			{args: []string{"get", "ro"}, want: "user name is empty"},
			{args: []string{"auth", "status"}, want: "Authentication Status: true"},
			{args: alice("put", "a/1", "x"), want: "OK"},
			{args: alice("get", "a/", "--prefix", "-w", "json"), want: "kvs"},
			{args: alice("put", "b", "x"), want: "permission denied"},
			{args: alice("get", "secret"), want: "permission denied"},
			{args: alice("user", "list"), want: "permission denied"},
			{args: alice("user", "get", "alice"), want: "Roles: app"},
			{args: alice("role", "get", "root"), want: "permission denied"},
			{args: []string{"--user=alice", "--password=alicepw", "get", "ro"}, want: "ro"},
			{args: []string{"--user=alice", "get", "ro"}, stdin: "alicepw\n", want: "Password: "},
			{args: []string{"get", "ro"}, env: []string{"ETCDCTL_USER=alice:alicepw"}, want: "ro"},
			{args: []string{"get", "ro"}, env: []string{"ETCDCTL_USER=alice", "ETCDCTL_PASSWORD=alicepw"}, want: "ro"},
			{args: as("alice:wrong", "get", "ro"), want: "authentication failed"},
			{args: as("nopass:x", "get", "ro"), want: "password was given for no password user"},
			{args: as("nobody:x", "get", "ro"), want: "authentication failed"},
			{args: []string{"--auth-jwt-token=not-a-token", "get", "ro"}, want: "invalid auth token"},
			{args: root("user", "delete", "root"), want: "invalid auth management"},
			{args: root("user", "revoke-role", "root", "root"), want: "invalid auth management"},
		},
		each(func(f string) step { return step{args: root("auth", "status")} }, all...),
		each(func(f string) step { return step{args: root("role", "grant-permission", "app", "read", "p-"+f)} }, all...),
		each(func(f string) step { return step{args: root("role", "revoke-permission", "app", "p-"+f)} }, all...),
		[]step{
			{args: root("role", "revoke-permission", "app", "ro"), want: "Permission of key ro is revoked"},
			{args: root("role", "revoke-permission", "app", "ro"), want: "permission is not granted"},
			{args: root("role", "revoke-permission", "app", "a/", "--prefix"), want: "Permission of range [a/, a0)"},
			{args: root("role", "revoke-permission", "app", "r1", "r9"), want: "Permission of range [r1, r9)"},
			{args: root("role", "revoke-permission", "app", "z", "--from-key"), want: "<open ended>"},
			{args: root("role", "revoke-permission", "app", "", "--prefix"), want: "permission is not granted"},
			{args: root("role", "revoke-permission", "app", "k", "l", "--prefix"), want: "unexpected endkey"},
			{args: root("role", "revoke-permission", "app")},
			{args: alice("get", "ro"), want: "permission denied"},
			{args: root("user", "passwd", "alice", "--interactive=false"), stdin: "newpw\n"},
			{args: alice("get", "a/1"), want: "authentication failed"},
			{args: as("alice:newpw", "role", "get", "app")},
			{args: root("user", "add", "gone:pw")},
			{args: root("role", "add", "gone")},
		},
		each(func(f string) step { return step{args: root("user", "add", "del-"+f+":pw")} }, "simple"),
		each(func(f string) step { return step{args: root("user", "delete", "del-simple")} }, "simple"),
		[]step{
			{args: root("-w", "json", "user", "delete", "gone")},
			{args: root("-w", "fields", "role", "delete", "gone")},
			{args: root("role", "delete", "app"), want: "Role app deleted"},
			{args: root("role", "delete", "app"), want: "role name not found"},
			{args: root("user", "delete", "nobody"), want: "user name not found"},
			{args: root("auth", "disable"), want: "Authentication Disabled"},
			{args: []string{"get", "secret"}, want: "secret"},
			{args: []string{"auth", "status", "-w", "json"}, want: "header"},
		},
	))
}

// TestAuthPromptWithoutTerminal: with no terminal, both tools still read
// the password from stdin after stty complains, and print the prompt.
func TestAuthPromptWithoutTerminal(t *testing.T) {
	tw := startAuthTwins(t)
	tw.checkAll(t, cat(authSetup, []step{
		{args: []string{"--user=alice", "put", "a/x", "y"}, stdin: "alicepw\n", want: "Password: "},
		{args: []string{"--user=alice", "get", "a/x"}, stdin: "", want: "user name is empty"},
		{args: []string{"--user=root", "user", "add", "frank"}, stdin: "fpw\nfpw\nrootpw\n", want: "User frank created"},
	}))
	if !strings.Contains(runTool(t, cairnctlBin, tw.ms[1], step{args: []string{"--user=frank:fpw", "auth", "status"}}).stdout, "true") {
		t.Error("frank cannot authenticate with the password typed at the prompt")
	}
}
