package etcdctl

import "testing"

// asUser prefixes args with etcdctl's --user flag.
func asUser(user string, args ...string) []string {
	return append([]string{"--user=" + user}, args...)
}

// etcdctl's "auth enable" creates the root role and grants it to root
// itself when they are missing, so the server's refusals of AuthEnable are
// covered by tests/e2e, not here.
func TestAuthCommands(t *testing.T) {
	p := startPair(t)
	root := func(args ...string) []string { return asUser("root:rootpw", args...) }
	alice := func(args ...string) []string { return asUser("alice:alicepw", args...) }
	p.checkAll(t, []step{
		{args: []string{"user", "add", "root:rootpw"}, want: "User root created"},
		{args: []string{"user", "grant-role", "root", "root"}, want: "Role root is granted to user root"},
		{args: []string{"role", "add", "app"}, want: "Role app created"},
		{args: []string{"role", "add", "app"}, want: "role name already exists", wantExit: 1},
		{args: []string{"role", "grant-permission", "app", "readwrite", "a/", "--prefix"}},
		{args: []string{"role", "grant-permission", "app", "read", "ro"}},
		{args: []string{"role", "grant-permission", "app", "write", "w", "x"}},
		{args: []string{"user", "add", "alice:alicepw"}},
		{args: []string{"user", "add", "alice:other"}, want: "user name already exists", wantExit: 1},
		{args: []string{"user", "add", "nopass", "--no-password"}},
		{args: []string{"user", "grant-role", "alice", "app"}},
		{args: []string{"user", "grant-role", "alice", "missing"}, want: "role name not found", wantExit: 1},
		{args: []string{"user", "revoke-role", "alice", "root"}, want: "role is not granted", wantExit: 1},
		{args: []string{"user", "list"}},
		{args: []string{"user", "list", "-w", "json"}},
		{args: []string{"role", "list"}},
		{args: []string{"role", "get", "app"}},
		{args: []string{"role", "get", "app", "-w", "json"}},
		{args: []string{"user", "get", "alice"}},
		{args: []string{"user", "get", "alice", "--detail"}},
		{args: []string{"user", "get", "missing"}, want: "user name not found", wantExit: 1},
		{args: []string{"put", "ro", "v"}},
		{args: []string{"put", "secret", "s"}},
		{args: []string{"auth", "enable"}, want: "Authentication Enabled"},
		{name: "get without user", args: []string{"get", "ro"}, want: "user name is empty", wantExit: 1},
		{name: "alice put", args: alice("put", "a/1", "x")},
		{name: "alice get prefix", args: alice("get", "a/", "--prefix")},
		{name: "alice get ro", args: alice("get", "ro", "-w", "json")},
		{name: "alice put outside", args: alice("put", "b", "x"), want: "permission denied", wantExit: 1},
		{name: "alice get secret", args: alice("get", "secret"), want: "permission denied", wantExit: 1},
		{name: "alice user list", args: alice("user", "list"), want: "permission denied", wantExit: 1},
		{name: "alice user get self", args: alice("user", "get", "alice")},
		{name: "alice role get app", args: alice("role", "get", "app")},
		{name: "alice role get root", args: alice("role", "get", "root"), want: "permission denied", wantExit: 1},
		{name: "wrong password", args: asUser("alice:wrong", "get", "ro"), want: "authentication failed", wantExit: 2},
		{name: "no-password user", args: asUser("nopass:x", "get", "ro"), want: "authentication failed", wantExit: 2},
		{name: "root auth status", args: root("auth", "status")},
		{name: "root delete root", args: root("user", "delete", "root"), want: "invalid auth management", wantExit: 1},
		{name: "root revoke root role", args: root("user", "revoke-role", "root", "root"), want: "invalid auth management", wantExit: 1},
		{name: "root revoke permission", args: root("role", "revoke-permission", "app", "ro")},
		{name: "root revoke missing permission", args: root("role", "revoke-permission", "app", "ro"), want: "permission is not granted", wantExit: 1},
		{name: "alice get ro after revoke", args: alice("get", "ro"), want: "permission denied", wantExit: 1},
		{name: "root change password", args: root("user", "passwd", "alice", "--interactive=false"), stdin: "newpw\n"},
		{name: "alice old password", args: alice("get", "a/1"), want: "authentication failed", wantExit: 2},
		{name: "alice new password", args: asUser("alice:newpw", "get", "a/1")},
		{name: "root role delete", args: root("role", "delete", "app")},
		{name: "root user get alice", args: root("user", "get", "alice")},
		{name: "root auth disable", args: root("auth", "disable"), want: "Authentication Disabled"},
		{args: []string{"get", "secret"}},
		{args: []string{"auth", "status", "-w", "json"}},
	})
}
