package ctl

// topic is the help text of one command as etcdctl v3.7 prints it, with
// the program's name in place of etcdctl's. Commands register their
// behaviour in their own files; their help lives here so that the
// command tree (parents, groups) prints as etcdctl's cobra tree does even
// for parents that have no behaviour of their own.
type topic struct {
	path  string // command words, "lease grant"
	use   string // cobra's Use: the name and its argument synopsis
	short string
	long  string
	group string // top-level commands only
}

// Command groups of the root help, in etcdctl's order.
var helpGroups = []struct{ id, title string }{
	{"kv", "Key-value commands"},
	{"cluster maintenance", "Cluster maintenance commands"},
	{"concurrency", "Concurrency commands"},
	{"authentication", "Authentication commands"},
	{"utility", "Utility commands"},
}

var topics = []topic{
	{path: "get", use: "get [options] <key> [range_end]", short: "Gets the key or a range of keys", group: "kv"},
	{path: "put", use: "put [options] <key> <value> (<value> can also be given from stdin)", short: "Puts the given key into the store", long: "\nPuts the given key into the store.\n\nWhen <value> begins with '-', <value> is interpreted as a flag.\nInsert '--' for workaround:\n\n$ put <key> -- <value>\n$ put -- <key> <value>\n\nIf <value> isn't given as a command line argument and '--ignore-value' is not specified,\nthis command tries to read the value from standard input.\n\nIf <lease> isn't given as a command line argument and '--ignore-lease' is not specified,\nthis command tries to read the value from standard input.\n\nFor example,\n$ cat file | put <key>\nwill store the content of the file to <key>.\n", group: "kv"},
	{path: "del", use: "del [options] <key> [range_end]", short: "Removes the specified key or range of keys [key, range_end)", group: "kv"},
	{path: "txn", use: "txn [options]", short: "Txn processes all the requests in one transaction", long: "Txn reads multiple etcd requests from standard input and applies them as a single atomic transaction.\n\nA transaction consists of three components:\n1) a list of conditions,\n2) a list of requests to apply if all the conditions are true,\n3) a list of requests to apply if any condition is false.\n\nExample interactive stdin usage:\n\n---\ncairnctl txn -i\n# compares:\nmod(\"key1\") > \"0\"\n\n# success requests (get, put, delete):\nput key1 \"overwrote-key1\"\n\n# failure requests (get, put, delete):\nput key1 \"created-key1\"\nput key2 \"some extra key\"\n---\n\nRefer to https://github.com/etcd-io/etcd/blob/main/etcdctl/README.md#txn-options.", group: "kv"},
	{path: "compaction", use: "compaction [options] <revision>", short: "Compacts the event history in etcd", group: "kv"},
	{path: "alarm", use: "alarm <subcommand>", short: "Alarm related commands. Use `cairnctl alarm --help` to see subcommands", long: "Alarm related commands", group: "cluster maintenance"},
	{path: "alarm disarm", use: "disarm", short: "Disarms all alarms"},
	{path: "alarm list", use: "list", short: "Lists all alarms"},
	{path: "defrag", use: "defrag", short: "Defragments the storage of the etcd members with given endpoints", group: "cluster maintenance"},
	{path: "endpoint", use: "endpoint <subcommand>", short: "Endpoint related commands. Use `cairnctl endpoint --help` to see subcommands", long: "Endpoint related commands", group: "cluster maintenance"},
	{path: "endpoint hashkv", use: "hashkv", short: "Prints the KV history hash for each endpoint in --endpoints"},
	{path: "endpoint health", use: "health", short: "Checks the healthiness of endpoints specified in `--endpoints` flag"},
	{path: "endpoint status", use: "status", short: "Prints out the status of endpoints specified in `--endpoints` flag", long: "When --write-out is set to simple, this command prints out comma-separated status lists for each endpoint.\nThe items in the lists are endpoint, ID, version, db size, is leader, is learner, raft term, raft index, raft applied index, errors.\n"},
	{path: "move-leader", use: "move-leader <transferee-member-id>", short: "Transfers leadership to another etcd cluster member.", group: "cluster maintenance"},
	{path: "watch", use: "watch [options] [key or prefix] [range_end] [--] [exec-command arg1 arg2 ...]", short: "Watches events stream on keys or prefixes", group: "kv"},
	{path: "version", use: "version", short: "Prints the version of cairnctl", group: "utility"},
	{path: "lease", use: "lease <subcommand>", short: "Lease related commands. Use `cairnctl lease --help` to see subcommands", long: "Lease related commands", group: "kv"},
	{path: "lease grant", use: "grant <ttl>", short: "Creates leases"},
	{path: "lease keep-alive", use: "keep-alive [options] <leaseID>", short: "Keeps leases alive (renew)"},
	{path: "lease list", use: "list", short: "List all active leases"},
	{path: "lease revoke", use: "revoke <leaseID>", short: "Revokes leases"},
	{path: "lease timetolive", use: "timetolive <leaseID> [options]", short: "Get lease information"},
	{path: "member", use: "member <subcommand>", short: "Membership related commands. Use `cairnctl member --help` to see subcommands", long: "Membership related commands", group: "cluster maintenance"},
	{path: "member add", use: "add <memberName> [options]", short: "Adds a member into the cluster"},
	{path: "member list", use: "list", short: "Lists all members in the cluster", long: "When --write-out is set to simple, this command prints out comma-separated member lists for each endpoint.\nThe items in the lists are ID, Status, Name, Peer Addrs, Client Addrs, Is Learner.\n"},
	{path: "member promote", use: "promote <memberID>", short: "Promotes a non-voting member in the cluster", long: "Promotes a non-voting learner member to a voting one in the cluster.\n"},
	{path: "member remove", use: "remove <memberID>", short: "Removes a member from the cluster"},
	{path: "member update", use: "update <memberID> [options]", short: "Updates a member in the cluster"},
	{path: "snapshot", use: "snapshot <subcommand>", short: "Manages etcd node snapshots", group: "cluster maintenance"},
	{path: "snapshot save", use: "save <filename>", short: "Stores an etcd node backend snapshot to a given file"},
	{path: "make-mirror", use: "make-mirror [options] <destination>", short: "Makes a mirror at the destination etcd cluster", group: "utility"},
	{path: "lock", use: "lock <lockname> [exec-command arg1 arg2 ...]", short: "Acquires a named lock", group: "concurrency"},
	{path: "elect", use: "elect <election-name> [proposal]", short: "Observes and participates in leader election", group: "concurrency"},
	{path: "auth", use: "auth <enable or disable>", short: "Enable or disable authentication. Use `cairnctl auth --help` to see subcommands", long: "Enable or disable authentication", group: "authentication"},
	{path: "auth disable", use: "disable", short: "Disables authentication"},
	{path: "auth enable", use: "enable", short: "Enables authentication"},
	{path: "auth status", use: "status", short: "Returns authentication status"},
	{path: "user", use: "user <subcommand>", short: "User related commands. Use `cairnctl user --help` to see subcommands", long: "User related commands", group: "authentication"},
	{path: "user add", use: "add <user name or user:password> [options]", short: "Adds a new user"},
	{path: "user delete", use: "delete <user name>", short: "Deletes a user"},
	{path: "user get", use: "get <user name> [options]", short: "Gets detailed information of a user"},
	{path: "user grant-role", use: "grant-role <user name> <role name>", short: "Grants a role to a user"},
	{path: "user list", use: "list", short: "Lists all users"},
	{path: "user passwd", use: "passwd <user name> [options]", short: "Changes password of user"},
	{path: "user revoke-role", use: "revoke-role <user name> <role name>", short: "Revokes a role from a user"},
	{path: "role", use: "role <subcommand>", short: "Role related commands. Use `cairnctl role --help` to see subcommands", long: "Role related commands", group: "authentication"},
	{path: "role add", use: "add <role name>", short: "Adds a new role"},
	{path: "role delete", use: "delete <role name>", short: "Deletes a role"},
	{path: "role get", use: "get <role name>", short: "Gets detailed information of a role"},
	{path: "role grant-permission", use: "grant-permission [options] <role name> <permission type> <key> [endkey]", short: "Grants a key to a role"},
	{path: "role list", use: "list", short: "Lists all roles"},
	{path: "role revoke-permission", use: "revoke-permission <role name> <key> [endkey]", short: "Revokes a key from a role"},
	{path: "check", use: "check <subcommand>", short: "commands for checking properties of the etcd cluster. Use `cairnctl check --help` to see subcommands", long: "commands for checking properties of the etcd cluster", group: "utility"},
	{path: "check datascale", use: "datascale [options]", short: "Check the memory usage of holding data for different workloads on a given server endpoint.", long: "If no endpoint is provided, localhost will be used. If multiple endpoints are provided, first endpoint will be used."},
	{path: "check perf", use: "perf [options]", short: "Check the performance of the etcd cluster"},
	{path: "downgrade", use: "downgrade <TARGET_VERSION>", short: "Downgrade related commands. Use `cairnctl downgrade --help` to see subcommands", long: "Downgrade related commands", group: "cluster maintenance"},
	{path: "downgrade cancel", use: "cancel", short: "Cancel the ongoing downgrade action to cluster"},
	{path: "downgrade enable", use: "enable <TARGET_VERSION>", short: "Start a downgrade action to cluster"},
	{path: "downgrade validate", use: "validate <TARGET_VERSION>", short: "Validate downgrade capability before starting downgrade"},
	{path: "options", use: "options", short: "Show the global command-line flags", group: "utility"},
	{path: "help", use: "help [command]", short: "Help about any command", long: "Help provides help for any command in the application.\nSimply type cairnctl help [path to command] for full details.", group: "utility"},
}
