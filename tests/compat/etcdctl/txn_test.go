package etcdctl

import (
	"strings"
	"testing"
)

// txnInput renders etcdctl txn's standard input: compares, success ops and
// failure ops, each section ended by an empty line.
func txnInput(compares, success, failure []string) string {
	var b strings.Builder
	for _, section := range [][]string{compares, success, failure} {
		for _, l := range section {
			b.WriteString(l + "\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestTxn(t *testing.T) {
	p := startPair(t)
	var steps []step
	add := func(s ...step) { steps = append(steps, s...) }
	// k1 is created at 2 and k2 at 3; neither is ever deleted, so the
	// compares below hold whatever ran before them.
	add(
		step{args: []string{"put", "k1", "v1"}},
		step{args: []string{"put", "k2", "v2"}},
		step{args: []string{"put", "k1", "v1b"}},
	)
	txns := []struct {
		name                       string
		compares, success, failure []string
		want                       string // in -w simple output
	}{
		{
			name:     "value equal takes success",
			compares: []string{`value("k1") = "v1b"`},
			success:  []string{"get k1", "put k3 x"},
			failure:  []string{"put never happens"},
			want:     "SUCCESS\n\nk1\nv1b\n\nOK",
		},
		{
			name:     "value not equal takes failure",
			compares: []string{`value("k1") != "v1b"`},
			success:  []string{"put never happens"},
			failure:  []string{"get k --prefix", "put k4 y --prev-kv"},
			want:     "FAILURE",
		},
		{
			name:     "version create mod all true",
			compares: []string{`version("k1") > "1"`, `create("k1") = "2"`, `mod("k1") > "3"`, `create("k2") < "4"`},
			success:  []string{"get k --prefix --keys-only", `put k2 "with space"`},
			want:     "SUCCESS",
		},
		{
			name:     "short target names, one false compare",
			compares: []string{`ver("k1") > "0"`, `c("k2") = "3"`, `m("k1") < "4"`},
			success:  []string{"put never happens"},
			failure:  []string{"del k3 --prev-kv", "get k1 --rev 2"},
			want:     "FAILURE",
		},
		{
			name:     "value compare on a missing key is false",
			compares: []string{`value("nokey") != "x"`},
			failure:  []string{"get nokey"},
			want:     "FAILURE",
		},
		{
			name:     "version of a missing key is 0",
			compares: []string{`version("nokey") = "0"`, `create("nokey") = "0"`, `mod("nokey") = "0"`},
			success:  []string{"put nokey now"},
			want:     "SUCCESS",
		},
		{
			name:    "no compares always succeeds",
			success: []string{"del nokey", "del nothing-here", "get k --prefix --limit 2 --sort-by=MODIFY --order=DESCEND"},
			failure: []string{"put never happens"},
			want:    "SUCCESS",
		},
		{
			name:     "value greater and less",
			compares: []string{`value("k1") > "v1a"`, `value("k2") < "x"`},
			success:  []string{"del k3 --prev-kv", "del t --prefix", "get k --prefix --count-only"},
			want:     "SUCCESS",
		},
		{
			name:     "empty success and failure",
			compares: []string{`value("gone") = "x"`},
			want:     "FAILURE",
		},
	}
	for i, tx := range txns {
		// Restore the values before each transaction, so that every output
		// format sees the same branch taken.
		for _, f := range formats {
			add(
				step{name: tx.name + " setup k1", args: []string{"put", "k1", "v1b"}},
				step{name: tx.name + " setup k2", args: []string{"put", "k2", "v2"}},
				step{name: tx.name + " setup k3", args: []string{"put", "k3", "x"}},
				step{name: tx.name + " setup nokey", args: []string{"del", "nokey"}},
			)
			st := step{
				name:  tx.name + " -w " + f,
				args:  []string{"txn", "-w", f},
				stdin: txnInput(txns[i].compares, txns[i].success, txns[i].failure),
			}
			if f == "simple" {
				st.want = tx.want
			}
			add(st)
		}
	}
	p.checkAll(t, steps)
}

func TestTxnInteractiveAndErrors(t *testing.T) {
	p := startPair(t)
	p.checkAll(t, []step{
		{args: []string{"put", "a", "1"}},
		{
			name:  "interactive prompts",
			args:  []string{"txn", "-i"},
			stdin: txnInput([]string{`mod("a") > "0"`}, []string{`put a "overwrote a"`}, []string{`put a "created a"`, "put b extra"}),
			want:  "compares:\nsuccess requests (get, put, del):\nfailure requests (get, put, del):\nSUCCESS\n\nOK",
		},
		{
			name:  "interactive failure branch json",
			args:  []string{"txn", "-i", "-w", "json"},
			stdin: txnInput([]string{`value("a") = "nope"`}, []string{"put a no"}, []string{"put b extra", "get a"}),
		},
		{name: "get after interactive", args: []string{"get", "", "--from-key"}, want: "a\noverwrote a\nb\nextra"},
		{
			name:     "duplicate put in one branch",
			args:     []string{"txn"},
			stdin:    txnInput(nil, []string{"put d 1", "put d 2"}, nil),
			want:     "Error: etcdserver: duplicate key given in txn request",
			wantExit: 1,
		},
		{
			name:     "put and delete of the same key",
			args:     []string{"txn"},
			stdin:    txnInput(nil, []string{"put d 1", "del d"}, nil),
			want:     "Error: etcdserver: duplicate key given in txn request",
			wantExit: 1,
		},
		{
			name:     "put inside a deleted range",
			args:     []string{"txn", "-w", "json"},
			stdin:    txnInput(nil, []string{"del a --prefix", "put ab 1"}, nil),
			want:     "Error: etcdserver: duplicate key given in txn request",
			wantExit: 1,
		},
		{
			name:  "same key in success and failure",
			args:  []string{"txn"},
			stdin: txnInput([]string{`value("a") = "overwrote a"`}, []string{"put d 1"}, []string{"put d 2"}),
			want:  "SUCCESS\n\nOK",
		},
		{
			name:     "ignore-value on a missing key inside a txn",
			args:     []string{"txn"},
			stdin:    txnInput(nil, []string{"put missing --ignore-value"}, nil),
			want:     "Error: etcdserver: key not found",
			wantExit: 1,
		},
		{
			name:     "empty key inside a txn",
			args:     []string{"txn"},
			stdin:    txnInput(nil, []string{`put "" v`}, nil),
			wantExit: 1,
		},
		{
			name:     "future revision inside a txn",
			args:     []string{"txn"},
			stdin:    txnInput(nil, []string{"get a --rev 1000"}, nil),
			want:     "Error: etcdserver: mvcc: required revision is a future revision",
			wantExit: 1,
		},
		{
			name:     "malformed compare",
			args:     []string{"txn"},
			stdin:    txnInput([]string{`value(a) = x`}, nil, nil),
			want:     "Error: malformed comparison",
			wantExit: 3,
		},
		{name: "nothing changed by failed txns", args: []string{"get", "", "--from-key", "-w", "json"}},
	})
}
