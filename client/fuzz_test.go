package client

import (
	"bytes"
	"testing"

	"github.com/cairnkv/cairn/pkg/fuzztest"
)

// FuzzPrefixEnd checks prefixEnd(prefix) against its definition, probing
// with key: the end is the smallest key above every key that starts with
// prefix, so exactly the keys in [prefix, end) start with prefix; a prefix
// with no such bound (empty, or all 0xff) gets "\x00", the end of the key
// space. WithPrefix and GetPrefixRangeEnd must agree with it.
func FuzzPrefixEnd(f *testing.F) {
	f.Fuzz(func(t *testing.T, prefix, key []byte) {
		end := prefixEnd(prefix)
		if GetPrefixRangeEnd(string(prefix)) != string(end) {
			t.Fatalf("GetPrefixRangeEnd(%q) = %q, prefixEnd = %q", prefix, GetPrefixRangeEnd(string(prefix)), end)
		}
		if len(prefix) == 0 {
			op := OpGet("", WithPrefix())
			if !bytes.Equal(op.key, []byte{0}) || !bytes.Equal(op.end, []byte{0}) {
				t.Fatalf("WithPrefix on the empty key selects [%q, %q)", op.key, op.end)
			}
		} else if op := OpGet(string(prefix), WithPrefix()); !bytes.Equal(op.end, end) {
			t.Fatalf("WithPrefix(%q) ends at %q, prefixEnd at %q", prefix, op.end, end)
		}
		unbounded := bytes.Count(prefix, []byte{0xff}) == len(prefix)
		if unbounded {
			if !bytes.Equal(end, []byte{0}) {
				t.Fatalf("prefixEnd(%q) = %q, want \"\\x00\"", prefix, end)
			}
			return
		}
		if bytes.Compare(end, prefix) <= 0 || bytes.HasPrefix(end, prefix) {
			t.Fatalf("prefixEnd(%q) = %q is not above every key with the prefix", prefix, end)
		}
		inRange := bytes.Compare(prefix, key) <= 0 && bytes.Compare(key, end) < 0
		if inRange != bytes.HasPrefix(key, prefix) {
			t.Fatalf("prefix %q, end %q: key %q in range = %v, has prefix = %v", prefix, end, key, inRange, !inRange)
		}
	})
}

// TestFuzzSeeds keeps the committed seed corpus equal to its generator.
// Regenerate with CAIRN_WRITE_FUZZ_SEEDS=1 go test -run TestFuzzSeeds.
func TestFuzzSeeds(t *testing.T) {
	seed := func(name, prefix, key string) fuzztest.Seed {
		return fuzztest.Seed{Name: name, Args: []any{[]byte(prefix), []byte(key)}}
	}
	fuzztest.Check(t, "FuzzPrefixEnd", []fuzztest.Seed{
		seed("plain", "foo/", "foo/bar"),
		seed("key-at-end", "foo/", "foo0"),
		seed("trailing-ff", "a\xff\xff", "b"),
		seed("all-ff", "\xff\xff", "\xff\xff\xff"),
		seed("empty", "", "x"),
		seed("zero-byte", "\x00", "\x00\xff"),
	})
}
