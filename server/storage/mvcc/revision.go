package mvcc

import (
	"cmp"
	"encoding/binary"
	"fmt"
)

// Revision identifies one change: Main is the store revision of the
// transaction, Sub the position of the change inside it.
type Revision struct {
	Main int64
	Sub  int64
}

const (
	// revBytesLen is the length of a revision in the key bucket:
	// 8 bytes main, the separator '_', 8 bytes sub.
	revBytesLen = 8 + 1 + 8
	// tombstoneRevBytesLen adds the tombstone mark.
	tombstoneRevBytesLen = revBytesLen + 1
	revSeparator         = '_'
	tombstoneMark        = 't'
)

// GreaterThan reports whether r comes after o.
func (r Revision) GreaterThan(o Revision) bool {
	if r.Main != o.Main {
		return r.Main > o.Main
	}
	return r.Sub > o.Sub
}

// compareRevisions orders revisions as the key bucket does: -1, 0 or 1
// as a comes before, with or after b.
func compareRevisions(a, b Revision) int {
	if c := cmp.Compare(a.Main, b.Main); c != 0 {
		return c
	}
	return cmp.Compare(a.Sub, b.Sub)
}

func (r Revision) String() string { return fmt.Sprintf("%d.%d", r.Main, r.Sub) }

// RevToBytes returns the 17-byte key-bucket form of rev.
func RevToBytes(rev Revision) []byte {
	return appendRevBytes(make([]byte, 0, tombstoneRevBytesLen), rev, false)
}

// TombstoneRevToBytes returns the 18-byte key-bucket form of a tombstone at rev.
func TombstoneRevToBytes(rev Revision) []byte {
	return appendRevBytes(make([]byte, 0, tombstoneRevBytesLen), rev, true)
}

// appendRevBytes appends the key-bucket form of rev to dst, which lets hot
// paths reuse one buffer.
func appendRevBytes(dst []byte, rev Revision, tombstone bool) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(rev.Main))
	dst = append(dst, revSeparator)
	dst = binary.BigEndian.AppendUint64(dst, uint64(rev.Sub))
	if tombstone {
		dst = append(dst, tombstoneMark)
	}
	return dst
}

// BytesToRev decodes the revision at the start of a key-bucket key (a
// tombstone mark after it is ignored). b must hold at least 17 bytes.
func BytesToRev(b []byte) Revision {
	return Revision{
		Main: int64(binary.BigEndian.Uint64(b[0:8])),
		Sub:  int64(binary.BigEndian.Uint64(b[9:17])),
	}
}

// IsTombstone reports whether a key-bucket key marks a deletion.
func IsTombstone(b []byte) bool {
	return len(b) == tombstoneRevBytesLen && b[revBytesLen] == tombstoneMark
}

// validRevBytes reports whether b has the shape of a key-bucket key.
func validRevBytes(b []byte) bool {
	switch len(b) {
	case revBytesLen:
		return b[8] == revSeparator
	case tombstoneRevBytesLen:
		return b[8] == revSeparator && b[revBytesLen] == tombstoneMark
	}
	return false
}
