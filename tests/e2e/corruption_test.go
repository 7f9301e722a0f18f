package e2e

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCorruptWALStopsTheMember flips one byte inside the records of the WAL:
// the member must refuse to start, with an error that names the file, and
// must not have touched the data.
func TestCorruptWALStopsTheMember(t *testing.T) {
	m := stoppedWithKeys(t, memberOpts{}, 50, "v")
	walFile := walSegments(t, m.dataDir)[0]
	data, err := os.ReadFile(walFile)
	must(t, err)
	// Inside an entry's data, which the CRC covers (a frame's padding is
	// not covered).
	at := bytes.Index(data, []byte("k0025"))
	if at < 0 {
		t.Fatalf("wal %s does not hold the put of k0025", walFile)
	}
	data[at] ^= 0xff
	must(t, os.WriteFile(walFile, data, 0o600))

	if out := mustNotStart(t, m); !strings.Contains(out, walFile) {
		t.Fatalf("error does not name the corrupt file %s:\n%s", walFile, out)
	}
}

// TestTornWALTailIsRepaired leaves a torn frame after the last WAL record,
// as a crash during a write leaves it: the member repairs the tail and
// serves every acknowledged write.
func TestTornWALTailIsRepaired(t *testing.T) {
	m := stoppedWithKeys(t, memberOpts{}, 20, "v")
	segs := walSegments(t, m.dataDir)
	last := segs[len(segs)-1]
	data, err := os.ReadFile(last)
	must(t, err)
	used := len(bytes.TrimRight(data, "\x00"))
	// After the last record, the start of a frame whose write the crash cut
	// off: its length word and first bytes reached the disk, the sectors
	// after them still read as the preallocated zeros. (A file cut short
	// instead is refused: see TestRefusesCutWALSegment.)
	at := (used + 7) &^ 7
	binary.LittleEndian.PutUint64(data[at:], 1500)
	copy(data[at+8:], bytes.Repeat([]byte{0x5a}, 40))
	must(t, os.WriteFile(last, data, 0o600))

	m.restart()
	cli := m.client(t)
	resp, err := cli.Get(ctx(t), "k", clientv3.WithPrefix())
	must(t, err)
	// The torn record was never acknowledged; every put before it is there.
	if resp.Count != 20 {
		t.Fatalf("after repairing a torn tail %d of 20 keys remain", resp.Count)
	}
	mustPut(t, cli, "after-repair", "v")
}
