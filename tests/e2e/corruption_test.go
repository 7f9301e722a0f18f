package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCorruptWALStopsTheMember flips one byte inside the records of the WAL:
// the member must refuse to start, with an error that names the file, and
// must not have touched the data.
func TestCorruptWALStopsTheMember(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	for i := 0; i < 50; i++ {
		mustPut(t, cli, fmt.Sprintf("k%02d", i), "v")
	}
	must(t, m.stop())

	walDir := filepath.Join(m.dataDir, "member", "wal")
	names, err := filepath.Glob(filepath.Join(walDir, "*.wal"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no wal files in %s: %v", walDir, err)
	}
	walFile := names[0]
	data, err := os.ReadFile(walFile)
	must(t, err)
	// Inside an entry's data, which the CRC covers (a frame's padding is
	// not covered).
	at := bytes.Index(data, []byte("k25"))
	if at < 0 {
		t.Fatalf("wal %s does not hold the put of k25", walFile)
	}
	data[at] ^= 0xff
	must(t, os.WriteFile(walFile, data, 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, cairnBin, m.args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("member with a corrupt WAL did not stop within %v:\n%s", startTimeout, out)
	}
	if err == nil {
		t.Fatalf("member started on a corrupt WAL:\n%s", out)
	}
	if !strings.Contains(string(out), walFile) {
		t.Fatalf("error does not name the corrupt file %s:\n%s", walFile, out)
	}
	if strings.Contains(string(out), readyLine) {
		t.Fatalf("member served on a corrupt WAL:\n%s", out)
	}
}

// TestTornWALTailIsRepaired leaves a torn frame after the last WAL record,
// as a crash during a write leaves it: the member repairs the tail and
// serves every acknowledged write.
func TestTornWALTailIsRepaired(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	for i := 0; i < 20; i++ {
		mustPut(t, cli, fmt.Sprintf("k%02d", i), "v")
	}
	must(t, m.stop())

	names, err := filepath.Glob(filepath.Join(m.dataDir, "member", "wal", "*.wal"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no wal files: %v", err)
	}
	last := names[len(names)-1]
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
	cli = m.client(t)
	resp, err := cli.Get(ctx(t), "k", clientv3.WithPrefix())
	must(t, err)
	// The torn record was never acknowledged; every put before it is there.
	if resp.Count != 20 {
		t.Fatalf("after repairing a torn tail %d of 20 keys remain", resp.Count)
	}
	mustPut(t, cli, "after-repair", "v")
}
