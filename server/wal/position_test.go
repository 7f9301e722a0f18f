package wal

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func TestEntryPositionMatchesDecodedEntry(t *testing.T) {
	for _, e := range []*raftpb.Entry{
		{},
		{Term: proto.Uint64(1), Index: proto.Uint64(1)},
		{Term: proto.Uint64(7), Index: proto.Uint64(1 << 40), Type: raftpb.EntryConfChange.Enum(), Data: []byte("conf")},
		{Term: proto.Uint64(1<<63 + 5), Index: proto.Uint64(3), Data: make([]byte, 300)},
	} {
		data, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		term, index, err := entryPosition(data)
		if err != nil || term != e.GetTerm() || index != e.GetIndex() {
			t.Errorf("entryPosition(%v) = %d, %d, %v", e, term, index, err)
		}
		if len(data) > 1 {
			if _, _, err := entryPosition(data[:len(data)-1]); err == nil {
				t.Errorf("entryPosition of truncated %v: no error", e)
			}
		}
	}
}
