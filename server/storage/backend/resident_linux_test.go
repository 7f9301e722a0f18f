package backend

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"testing"
)

// mappedRSS returns the resident kB of this process's mappings of path,
// from /proc/self/smaps.
func mappedRSS(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	total, inFile := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			inFile = len(fields) == 6 && fields[5] == path
		case inFile && len(fields) == 3 && fields[0] == "Rss:":
			kb, _ := strconv.Atoi(fields[1])
			total += kb
		}
	}
	return total
}

func TestDropResidentPagesKeepsData(t *testing.T) {
	b, path := NewTmpBackend(t)
	value := bytes.Repeat([]byte("v"), 1000)
	tx := b.BatchTx()
	tx.Lock()
	for i := range 8000 {
		tx.UnsafeSeqPut(BucketKey, binary.BigEndian.AppendUint64(nil, uint64(i)), value)
	}
	tx.Unlock()
	b.Commit()

	readAll := func() int {
		n := 0
		rt := b.ReadTx()
		rt.RLock()
		defer rt.RUnlock()
		_ = rt.UnsafeForEach(BucketKey, func(k, v []byte) error {
			if bytes.Equal(v, value) {
				n++
			}
			return nil
		})
		return n
	}
	if n := readAll(); n != 8000 {
		t.Fatalf("read %d values before, want 8000", n)
	}
	before := mappedRSS(t, path)
	b.DropResidentPages()
	after := mappedRSS(t, path)
	t.Logf("db mapping resident: %d kB after a full read, %d kB after the drop", before, after)
	if before < 4000 || after > before/10 {
		t.Errorf("resident kB of the db mapping: %d after a full read, %d after the drop", before, after)
	}
	if n := readAll(); n != 8000 {
		t.Fatalf("read %d values after the drop, want 8000", n)
	}
}
