package wal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
)

func TestSpareSegmentsRemoveLeftoversAndNameEachSpare(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"spare-7.tmp", "0.tmp", "1.tmp", "keep.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := newSpareSegments(zap.NewNop(), dir, 4096)
	a, err := s.take()
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.take()
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() == b.Name() {
		t.Fatalf("two spares share the name %s", a.Name())
	}
	if st, err := b.Stat(); err != nil || st.Size() != 4096 {
		t.Fatalf("spare not preallocated: %v %v", st, err)
	}
	a.Close()
	b.Close()
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	want := []string{filepath.Join(dir, "keep.txt"), a.Name(), b.Name()}
	if len(left) != len(want) {
		t.Fatalf("files left %v, want %v (taken spares belong to the WAL; the pending one is removed)", left, want)
	}
	if _, err := s.take(); !errors.Is(err, errSparesClosed) {
		t.Fatalf("take after close: %v", err)
	}
}

func TestSpareSegmentsRetryAfterAFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "later")
	s := newSpareSegments(zap.NewNop(), dir, 4096)
	if _, err := s.take(); err == nil {
		t.Fatal("a spare was made in a missing directory")
	}
	// The failed take already started the next spare, in a directory that is
	// still missing; once the directory exists, the one after works.
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if f, err := s.take(); err == nil {
		f.Close()
	}
	f, err := s.take()
	if err != nil {
		t.Fatalf("no recovery after the directory appeared: %v", err)
	}
	f.Close()
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
}
