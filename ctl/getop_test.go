package ctl

import (
	"strings"
	"testing"
)

// TestGetOpRefusals checks get's refusals and their precedence (etcdctl's
// order: arguments, then sorting, then revision filters).
func TestGetOpRefusals(t *testing.T) {
	tests := []struct {
		name string
		o    opts
		args []string
		want string // "" for accepted
	}{
		{"no key", opts{}, nil, "get command needs one argument"},
		{"prefix and from-key", opts{prefix: true, fromKey: true}, []string{"a"}, "`--prefix` and `--from-key` cannot be set"},
		{"keys and count", opts{keysOnly: true, countOnly: true}, []string{"a"}, "`--keys-only` and `--count-only` cannot be set"},
		{"range with prefix", opts{prefix: true}, []string{"a", "b"}, "too many arguments"},
		{"bad order before bad target", opts{order: "up", sortBy: "size"}, []string{"a"}, "bad sort order up"},
		{"bad target", opts{sortBy: "size"}, []string{"a"}, "bad sort target size"},
		{"create window", opts{minCreate: 5, maxCreate: 3}, []string{"a"}, "getMinCreateRev(=5) > getMaxCreateRev(=3)"},
		{"mod window", opts{minMod: 5, maxMod: 3}, []string{"a"}, "getMinModRev(=5) > getMaxModRev(=3)"},
		{"lower-case sort", opts{order: "descend", sortBy: "value"}, []string{"a"}, ""},
		{"empty prefix", opts{prefix: true}, []string{""}, ""},
	}
	for _, tt := range tests {
		tt.o.consistency = "l"
		key, _, err := getOp(&tt.o, tt.args)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		case tt.name == "empty prefix" && key != "\x00":
			t.Errorf("empty prefix reads from %q, want the whole key space", key)
		}
	}
}
