package etcdctl

import "testing"

// formats are the output formats etcdctl offers for KV commands.
var formats = []string{"simple", "json", "fields", "protobuf"}

// withFormats expands a step into one step per output format (all of them
// if fs is empty).
func withFormats(st step, fs ...string) []step {
	if len(fs) == 0 {
		fs = formats
	}
	var out []step
	for _, f := range fs {
		s := st
		// -w goes right after the command, before any "--".
		s.args = append([]string{st.args[0], "-w", f}, st.args[1:]...)
		s.name = ""
		if f != "simple" {
			s.want = "" // the text in want is what -w simple prints
		}
		out = append(out, s)
	}
	return out
}

func TestPutGetDel(t *testing.T) {
	p := startPair(t)
	var steps []step
	add := func(s ...step) { steps = append(steps, s...) }

	// Revision 2..9: the data set the reads below look at.
	add(
		step{args: []string{"put", "foo", "bar"}, want: "OK"},
		step{args: []string{"put", "foo", "bar2", "--prev-kv"}, want: "OK\nfoo\nbar"},
		step{args: []string{"put", "foo1", "v1", "-w", "json"}, want: `"revision": 4`},
		step{args: []string{"put", "foo2", "v2", "-w", "fields"}, want: `"Revision" : 5`},
		step{args: []string{"put", "foo3", "v3", "-w", "protobuf"}, want: "revision: 6"},
		step{args: []string{"put", "a", "3"}},
		step{args: []string{"put", "b", "2"}},
		step{args: []string{"put", "c", "1"}},
		step{args: []string{"put", "foo", "bar3", "--prev-kv", "-w", "json"}, want: `"prev_kv"`},
		step{args: []string{"put", "zoo", "z", "--prev-kv", "-w", "fields"}},
		step{args: []string{"put", "--", "-dash", "value with spaces"}, want: "OK"},
		step{name: "put value from stdin", args: []string{"put", "stdin-key"}, stdin: "from stdin", want: "OK"},
	)
	// Reads, each in every output format.
	for _, st := range []step{
		{args: []string{"get", "foo"}, want: "foo\nbar3"},
		{args: []string{"get", "foo", "--stream"}, want: "foo\nbar3"},
		{args: []string{"get", "", "--from-key", "--stream", "--limit=5"}, want: "-dash\nvalue with spaces\na\n3"},
		{args: []string{"get", "nosuchkey"}},
		{args: []string{"get", "foo", "--prefix"}, want: "foo\nbar3\nfoo1\nv1\nfoo2\nv2\nfoo3\nv3"},
		{args: []string{"get", "foo", "foo3"}, want: "foo\nbar3\nfoo1\nv1\nfoo2\nv2"},
		{args: []string{"get", "foo", "--prefix", "--limit", "2"}},
		{args: []string{"get", "b", "--from-key"}, want: "b\n2\nc\n1\nfoo\nbar3"},
		{args: []string{"get", "", "--from-key", "--limit=3"}},
		{args: []string{"get", "foo", "--rev", "2"}, want: "foo\nbar"},
		{args: []string{"get", "foo", "--rev", "1"}},
		{args: []string{"get", "foo", "--prefix", "--rev", "5"}},
		{args: []string{"get", "foo", "--prefix", "--sort-by=MODIFY", "--order=DESCEND"}, want: "foo\nbar3\nfoo3\nv3"},
		{args: []string{"get", "", "--prefix", "--sort-by=VALUE", "--order=ASCEND"}},
		{args: []string{"get", "", "--from-key", "--sort-by=CREATE", "--order=DESCEND", "--limit=4"}},
		{args: []string{"get", "", "--from-key", "--sort-by=VERSION"}},
		{args: []string{"get", "", "--from-key", "--sort-by=KEY", "--order=DESCEND"}},
		{args: []string{"get", "foo", "--prefix", "--keys-only"}, want: "foo\n\nfoo1"},
		{args: []string{"get", "foo", "--prefix", "--consistency=s"}, want: "foo\nbar3"},
		{args: []string{"get", "a", "d", "--consistency=s", "--keys-only", "--limit=2"}},
		{args: []string{"get", "foo", "--hex"}},
		{args: []string{"get", "foo", "--prefix", "--min-mod-rev=4", "--max-mod-rev=6"}},
		{args: []string{"get", "foo", "--prefix", "--min-create-rev=5", "--max-create-rev=6"}},
		{args: []string{"get", "--prefix", "--", "-dash"}},
		{args: []string{"get", "stdin-key"}, want: "stdin-key\nfrom stdin"},
	} {
		add(withFormats(st)...)
	}
	// Options etcdctl allows with one output format only.
	add(
		step{args: []string{"get", "foo", "--prefix", "--count-only", "-w", "fields"}, want: `"Count" : 4`},
		step{args: []string{"get", "", "--from-key", "--count-only", "--limit=1", "-w", "fields"}},
		step{args: []string{"get", "foo", "--prefix", "--print-value-only"}, want: "bar3\nv1\nv2\nv3"},
		step{args: []string{"get", "foo", "--prefix", "--print-value-only", "--stream"}, want: "bar3\nv1\nv2\nv3"},
		step{args: []string{"get", "foo", "--prefix", "--print-value-only", "-w", "json"},
			want: "Error: print-value-only is only for `--write-out=simple`", wantExit: 128},
	)
	// Writes that look back, then deletes in every format.
	add(
		step{args: []string{"put", "foo", "--ignore-value"}, want: "OK"},
		step{args: []string{"put", "foo", "bar3", "--prev-kv", "--write-out=protobuf"}, want: "prev_kv: {\nkey: \"foo\""},
		step{args: []string{"put", "foo1", "--ignore-value", "--prev-kv", "--write-out=json"}},
		step{args: []string{"get", "foo", "-w", "json"}},
		step{args: []string{"del", "nosuchkey"}, want: "0"},
		step{args: []string{"del", "zoo", "--prev-kv"}, want: "1\nzoo\nz"},
		step{args: []string{"del", "foo3", "-w", "json"}},
		step{args: []string{"del", "foo2", "--prev-kv", "-w", "fields"}},
		step{args: []string{"del", "foo1", "--prev-kv", "-w", "protobuf"}},
		step{args: []string{"del", "foo", "--prefix", "--prev-kv"}, want: "1\nfoo\nbar3"},
		step{args: []string{"del", "b", "--from-key", "-w", "json"}},
		step{args: []string{"del", "a", "c", "--prev-kv", "-w", "fields"}},
		step{args: []string{"get", "", "--from-key", "-w", "json"}},
		step{args: []string{"del", "", "--from-key", "-w", "protobuf"}},
		step{args: []string{"get", "", "--prefix", "--count-only", "-w", "fields"}},
	)
	p.checkAll(t, steps)
}

func TestKVErrors(t *testing.T) {
	p := startPair(t)
	p.checkAll(t, []step{
		{args: []string{"put", "k", "v1"}},
		{args: []string{"put", "k", "v2"}},
		{name: "ignore-value on a missing key", args: []string{"put", "missing", "--ignore-value"},
			want: "Error: etcdserver: key not found", wantExit: 1},
		{name: "ignore-value on a missing key json", args: []string{"put", "missing", "--ignore-value", "-w", "json"},
			want: "Error: etcdserver: key not found", wantExit: 1},
		{name: "put empty key", args: []string{"put", "", "v"}, want: "Error: etcdserver: key is not provided", wantExit: 1},
		{name: "get empty key", args: []string{"get", ""}, want: "Error: etcdserver: key is not provided", wantExit: 1},
		{name: "del empty key", args: []string{"del", ""}, want: "Error: etcdserver: key is not provided", wantExit: 1},
		{name: "get a future revision", args: []string{"get", "k", "--rev", "100"},
			want: "Error: etcdserver: mvcc: required revision is a future revision", wantExit: 1},
		{name: "get a future revision fields", args: []string{"get", "k", "--rev", "100", "-w", "fields"}, wantExit: 1},
		{name: "put without value", args: []string{"put", "k"}, wantExit: 128},
		{name: "bad sort target", args: []string{"get", "k", "--sort-by=NOPE"}, wantExit: 4},
		{name: "prefix and from-key", args: []string{"get", "k", "--prefix", "--from-key"}, wantExit: 128},
		{name: "unknown output format", args: []string{"get", "k", "-w", "yaml"}, wantExit: 4},
		{name: "count-only with keys-only", args: []string{"get", "k", "--count-only", "--keys-only"}, wantExit: 128},
		{name: "count-only simple", args: []string{"get", "k", "--count-only"}, wantExit: 128},
		{name: "range end before key", args: []string{"get", "z", "a"}},
	})
}
