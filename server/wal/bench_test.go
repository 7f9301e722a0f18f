package wal

import (
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func benchmarkSave(b *testing.B, batch int) {
	dir := filepath.Join(b.TempDir(), "wal")
	w := mustCreate(b, dir, nil)
	defer mustClose(b, w)
	data := make([]byte, 128)
	b.SetBytes(int64(batch * len(data)))
	b.ReportAllocs()
	index := uint64(1)
	b.ResetTimer()
	for b.Loop() {
		ents := make([]*raftpb.Entry, batch)
		for i := range ents {
			ents[i] = entries(index, 1, 1, 0)[0]
			ents[i].Data = data
			index++
		}
		// New entries always force an fdatasync.
		mustSave(b, w, hardState(1, 1, index-1), ents)
	}
}

func BenchmarkSave1Entry(b *testing.B)     { benchmarkSave(b, 1) }
func BenchmarkSave100Entries(b *testing.B) { benchmarkSave(b, 100) }
