// Package fuzztest holds what go test -fuzz targets share: committed seed
// corpora kept in step with the code that generates them, and scratch
// directories on a fast file system.
//
// Seeds: a package's test builds its seeds from realistic inputs (a real
// WAL segment, a real snapshot file) and calls Check. Normally Check fails
// the test when a committed file under testdata/fuzz/<FuzzName>/ differs
// from what the generator produces now; with CAIRN_WRITE_FUZZ_SEEDS=1 in
// the environment it (re)writes the files instead. Files are in Go's
// "go test fuzz v1" format, so `go test` runs them as seeds and the fuzzer
// starts from them. The package knows nothing of cairn.
package fuzztest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
)

// WriteEnv is the environment variable that makes Check write the files.
const WriteEnv = "CAIRN_WRITE_FUZZ_SEEDS"

// Seed is one corpus entry: a file name and the fuzz function's arguments
// after *testing.T, in order.
type Seed struct {
	Name string
	Args []any
}

// Check compares (or, with WriteEnv=1, writes) the corpus of fuzzName in
// testdata/fuzz/<fuzzName> of the current package directory.
func Check(t *testing.T, fuzzName string, seeds []Seed) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", fuzzName)
	write := os.Getenv(WriteEnv) == "1"
	if write {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := make(map[string]bool, len(seeds))
	for _, s := range seeds {
		want[s.Name] = true
		content, err := Encode(s.Args...)
		if err != nil {
			t.Fatalf("seed %s: %v", s.Name, err)
		}
		path := filepath.Join(dir, s.Name)
		if write {
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("seed %s is missing or stale (%v); regenerate with %s=1 go test -run %s", path, err, WriteEnv, t.Name())
		}
	}
	checkNoStrays(t, dir, want, write)
}

// checkNoStrays reports committed seeds the generator no longer produces;
// files the fuzzer added after a crash (named by hash) are regression
// inputs and stay.
func checkNoStrays(t *testing.T, dir string, want map[string]bool, write bool) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !write {
			t.Errorf("no seed corpus in %s: %v", dir, err)
		}
		return
	}
	var strays []string
	for _, e := range entries {
		if !want[e.Name()] && !isFuzzerName(e.Name()) {
			strays = append(strays, e.Name())
		}
	}
	sort.Strings(strays)
	if len(strays) > 0 {
		t.Errorf("seeds in %s no generator produces: %v", dir, strays)
	}
}

// isFuzzerName reports whether name looks like a file the fuzzer wrote: 16
// hex digits (Go's name for a crasher it saved).
func isFuzzerName(name string) bool {
	if len(name) != 16 {
		return false
	}
	_, err := strconv.ParseUint(name, 16, 64)
	return err == nil
}

// Encode renders values in Go's "go test fuzz v1" corpus format.
func Encode(values ...any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, v := range values {
		line, err := encodeValue(v)
		if err != nil {
			return nil, err
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

func encodeValue(v any) (string, error) {
	switch v := v.(type) {
	case []byte:
		return fmt.Sprintf("[]byte(%q)", v), nil
	case byte:
		return fmt.Sprintf("byte(%q)", v), nil
	case string:
		return fmt.Sprintf("string(%q)", v), nil
	case bool, int, int64, uint64, uint32:
		return fmt.Sprintf("%T(%v)", v, v), nil // the type's name, then the value in decimal
	}
	return "", fmt.Errorf("fuzztest: unsupported type %T", v)
}

// ScratchDir returns an empty directory that is removed when t ends, on
// tmpfs (/dev/shm) when the machine has one. Targets that write files run
// thousands of times a second; on a busy disk their fsyncs, not the code
// under test, would set the pace.
func ScratchDir(t testing.TB) string {
	t.Helper()
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("/dev/shm", "cairn-fuzz-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// KeyAlphabet is what Keys maps fuzz bytes onto: the smallest byte, two
// ordinary ones and the largest, so that keys collide, nest as prefixes
// and reach the edges of the key space often.
var KeyAlphabet = [4]byte{0x00, 'a', 'b', 0xff}

// Keys splits fuzz bytes into keys: a byte >= 0xf0 ends a key, any other
// byte b adds KeyAlphabet[b%4] to it. Committed seeds encode keys this way:
// the mapping must not change.
func Keys(b []byte) [][]byte {
	keys := [][]byte{{}}
	for _, v := range b {
		if v >= 0xf0 {
			keys = append(keys, []byte{})
			continue
		}
		last := len(keys) - 1
		keys[last] = append(keys[last], KeyAlphabet[v%4])
	}
	return keys
}

// KeysSeed is the inverse of Keys for writing seeds by hand: each digit
// 0-3 of s stands for KeyAlphabet[digit], a space ends a key. KeysSeed("1 03")
// decodes to the keys "a" and "\x00\xff".
func KeysSeed(s string) []byte {
	var b []byte
	for _, c := range s {
		if c == ' ' {
			b = append(b, 0xf0)
		} else {
			b = append(b, byte(c-'0'))
		}
	}
	return b
}
