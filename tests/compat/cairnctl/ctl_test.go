package cairnctl

import "testing"

func cat(groups ...[]step) []step {
	var out []step
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

var all = []string{"simple", "json", "fields", "protobuf", "table"}

func TestKV(t *testing.T) {
	tw := twins{startTwins(t)}
	tw.checkAll(t, cat(
		[]step{s("version")},
		[]step{{args: []string{"version"}, want: "API version: 3.7"}},
		[]step{s("put", "a", "1"), s("put", "b", "2"), s("put", "--prev-kv", "a", "10"), s("put", "c", "3", "-w", "json")},
		[]step{{args: []string{"put", "d"}, stdin: "from stdin"}},
		formats(s("put", "e", "5"), all...),
		formats(s("get", "a"), all...),
		formats(s("get", "--prefix", ""), all...),
		[]step{
			s("get", "a", "c"), s("get", "--from-key", "b"), s("get", "--prefix", "", "--limit=2"),
			s("get", "--prefix", "", "--keys-only"), s("get", "--prefix", "", "--count-only", "-w", "json"),
			s("get", "--prefix", "", "--print-value-only"), s("get", "--prefix", "", "--sort-by=VALUE", "--order=DESCEND"),
			s("get", "a", "--rev", "2"), s("get", "--hex", "a"), s("get", "--prefix", "", "--min-mod-rev=3", "--max-mod-rev=4"),
			s("get", "--consistency=s", "b"), s("get"), s("get", "--prefix", "--from-key", "a"),
			s("get", "--order=sideways", "a"), s("get", "--nosuchflag", "a"),
			s("-w", "fields", "--hex", "get", "a"),
		},
		[]step{{args: []string{"get", "a"}, env: []string{"ETCDCTL_WRITE_OUT=json"}, want: "kvs"}},
		formats(s("del", "e", "--prev-kv"), "simple", "json", "fields", "protobuf"),
		[]step{s("del", "--prefix", "zz"), s("del", "a", "c", "--range"), s("del"), s("get", "--prefix", "")},
		[]step{s("compaction", "3"), s("compaction", "1"), s("get", "a", "--rev=2")},
	))
}

func TestTxn(t *testing.T) {
	tw := twins{startTwins(t)}
	in := "val(\"k\") = \"v\"\n\nput k v2\nget k\n\nput k v\ndel nothing\n\n"
	tw.checkAll(t, cat(
		[]step{s("put", "k", "v0")},
		[]step{{args: []string{"txn"}, stdin: in, want: "FAILURE"}},
		[]step{{args: []string{"txn", "-i"}, stdin: in, want: "compares:"}},
		formats(step{args: []string{"txn"}, stdin: in}, "json", "fields", "protobuf"),
		[]step{{args: []string{"txn"}, stdin: "mod(\"k\") > \"0\"\nversion(\"k\") = \"4\"\n\nget k --prefix\n\n\n"}},
		[]step{{args: []string{"txn"}, stdin: "bad\n\n\n\n"}},
		[]step{{args: []string{"txn"}, stdin: "\nfrob k\n\n\n"}},
	))
}

func TestLeaseMemberMaintenance(t *testing.T) {
	tw := twins{startTwins(t)}
	tw.checkAll(t, cat(
		[]step{s("lease", "list"), s("lease", "timetolive", "abc"), s("lease", "revoke", "abc"),
			s("lease", "grant"), s("lease", "grant", "x"), s("lease", "keep-alive", "--once", "abc")},
		formats(s("lease", "list"), "simple", "json", "fields", "protobuf"),
		formats(s("member", "list"), all...),
		[]step{s("member", "list", "--hex", "-w", "json"), s("member", "remove", "zz"), s("member", "add"),
			s("member", "add", "x"), s("member", "update", "1", "--peer-urls=http://127.0.0.1:1"), s("member", "promote", "1")},
		formats(s("endpoint", "health"), "simple", "json", "table"),
		formats(s("endpoint", "hashkv"), "simple", "json", "fields", "table"),
		[]step{s("endpoint", "health", "--cluster"), s("endpoint", "hashkv", "--cluster"), s("endpoint", "status", "-w", "protobuf")},
		formats(s("alarm", "list"), "simple", "json", "fields", "protobuf"),
		[]step{s("alarm", "disarm"), s("defrag"), s("defrag", "--cluster"), s("move-leader", "1"), s("move-leader", "zz"),
			s("snapshot", "save"), {args: []string{"snapshot", "save", "{dir}/snap.db"}, want: "Snapshot saved at {dir}/snap.db"}},
	))
}
