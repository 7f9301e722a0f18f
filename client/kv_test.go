package client

import (
	"testing"
)

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"a": "b", "a\xff": "b", "\xff\xff": "\x00", "ab": "ac"} {
		if got := GetPrefixRangeEnd(in); got != want {
			t.Errorf("prefix end of %q = %q, want %q", in, got, want)
		}
	}
}
