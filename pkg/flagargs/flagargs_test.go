package flagargs

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		args    []string
		wantPos []string
		wantW   string
		wantB   bool
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, "simple", false},
		{[]string{"-w", "json", "a"}, []string{"a"}, "json", false},
		{[]string{"a", "-w", "json", "b", "--b"}, []string{"a", "b"}, "json", true},
		{[]string{"a", "b", "-w=table"}, []string{"a", "b"}, "table", false},
		{[]string{"a", "-w", "json", "b", "--b", "--", "-c", "--b"}, []string{"a", "b", "-c", "--b"}, "json", true},
		{[]string{"--", "-w"}, []string{"-w"}, "simple", false},
		{nil, nil, "simple", false},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		w := fs.String("w", "simple", "")
		b := fs.Bool("b", false, "")
		pos, err := Parse(fs, tt.args)
		if err != nil || !slices.Equal(pos, tt.wantPos) || *w != tt.wantW || *b != tt.wantB {
			t.Errorf("%q: got %q -w %q -b %v err %v, want %q %q %v", tt.args, pos, *w, *b, err, tt.wantPos, tt.wantW, tt.wantB)
		}
	}
}

func TestParseReportsABadFlag(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := Parse(fs, []string{"a", "--bogus"}); err == nil {
		t.Fatal("an unknown flag after a positional argument parsed")
	}
}
