package utl

import (
	"bytes"
	"testing"

	"github.com/cairnkv/cairn/pkg/bytesize"
)

func TestHumanBytes(t *testing.T) {
	cases := map[uint64]string{0: "0 B", 9: "9 B", 10: "10 B", 999: "999 B", 1000: "1.0 kB", 20480: "20 kB", 36864: "37 kB", 1_500_000: "1.5 MB", 10_000_000_000: "10 GB"}
	for n, want := range cases {
		if got := bytesize.SI(n); got != want {
			t.Errorf("bytesize.SI(%d) = %q, want %q", n, got, want)
		}
	}
}

// The tables below are etcdutl v3.7.3's output for the same values.
func TestTableMatchesEtcdutl(t *testing.T) {
	var b bytes.Buffer
	writeTable(&b, statusReport(Status{Hash: 0xb844f9c1, Revision: 7, TotalKey: 4, TotalSize: 20480, Version: "3.7.0"}).header,
		statusReport(Status{Hash: 0xb844f9c1, Revision: 7, TotalKey: 4, TotalSize: 20480, Version: "3.7.0"}).row)
	want := "┌──────────┬──────────┬────────────┬────────────┬─────────┐\n" +
		"│   HASH   │ REVISION │ TOTAL KEYS │ TOTAL SIZE │ VERSION │\n" +
		"├──────────┼──────────┼────────────┼────────────┼─────────┤\n" +
		"│ b844f9c1 │        7 │          4 │      20 kB │   3.7.0 │\n" +
		"└──────────┴──────────┴────────────┴────────────┴─────────┘\n"
	if b.String() != want {
		t.Errorf("status table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	r := hashKVReport(HashKV{Hash: 942876398, HashRevision: 7, CompactRevision: -1})
	writeTable(&b, r.header, r.row)
	want = "┌───────────┬───────────────┬──────────────────┐\n" +
		"│   HASH    │ HASH REVISION │ COMPACT REVISION │\n" +
		"├───────────┼───────────────┼──────────────────┤\n" +
		"│ 942876398 │             7 │               -1 │\n" +
		"└───────────┴───────────────┴──────────────────┘\n"
	if b.String() != want {
		t.Errorf("hashkv table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestPrintReportFormats(t *testing.T) {
	r := statusReport(Status{Hash: 0xb844f9c1, Revision: 7, TotalKey: 4, TotalSize: 20480, Version: "3.7.0"})
	want := map[string]string{
		"simple": "b844f9c1, 7, 4, 20 kB, 3.7.0\n",
		"json":   `{"hash":3091528129,"revision":7,"totalKey":4,"totalSize":20480,"version":"3.7.0"}` + "\n",
		"fields": "\"Hash\" : 3091528129\n\"Revision\" : 7\n\"Keys\" : 4\n\"Size\" : 20480\n\"Version\" : 3.7.0\n",
	}
	for format, w := range want {
		var b bytes.Buffer
		if err := printReport(&b, format, r); err != nil || b.String() != w {
			t.Errorf("%s: %q, %v; want %q", format, b.String(), err, w)
		}
	}
	if err := printReport(&bytes.Buffer{}, "protobuf", r); err == nil || err.Error() != "protobuf not supported as output format" {
		t.Errorf("protobuf: %v", err)
	}
}

func TestNormalizeVersion(t *testing.T) {
	cases := map[string]string{"3.7.0": "3.7.0", "3.6.0-alpha.1": "3.6.0-alpha.1", "3.7": "", "": "", "x.y.z": "", "3.7.0.1": "", "03.7.0": "3.7.0"}
	for in, want := range cases {
		got, ok := normalizeVersion(in)
		if got != want || ok != (want != "") {
			t.Errorf("normalizeVersion(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestCobraFlagError(t *testing.T) {
	fs := newFlagSet("x")
	err := fs.Parse([]string{"--bogus"})
	if got := cobraFlagError(err).Error(); got != "unknown flag: --bogus" {
		t.Errorf("got %q", got)
	}
}
