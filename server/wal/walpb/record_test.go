package walpb

import (
	"bytes"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func TestRecordEncoding(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
		want []byte
	}{
		{"crc record, zero values still written", Record{Type: 4}, []byte{0x08, 0x04, 0x10, 0x00}},
		{"nil data omitted", Record{Type: 4, Crc: 0x12345678}, []byte{0x08, 0x04, 0x10, 0xf8, 0xac, 0xd1, 0x91, 0x01}},
		{"empty data written", Record{Type: 1, Crc: 1, Data: []byte{}}, []byte{0x08, 0x01, 0x10, 0x01, 0x1a, 0x00}},
		{"data", Record{Type: 2, Crc: 300, Data: []byte("ab")}, []byte{0x08, 0x02, 0x10, 0xac, 0x02, 0x1a, 0x02, 'a', 'b'}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.rec.Marshal()
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("got % x, want % x", got, tt.want)
			}
			if tt.rec.Size() != len(got) {
				t.Fatalf("Size %d, encoded %d", tt.rec.Size(), len(got))
			}
			var back Record
			if err := back.Unmarshal(got); err != nil {
				t.Fatal(err)
			}
			if back.Type != tt.rec.Type || back.Crc != tt.rec.Crc || !bytes.Equal(back.Data, tt.rec.Data) || (back.Data == nil) != (tt.rec.Data == nil) {
				t.Fatalf("round trip: %+v, want %+v", back, tt.rec)
			}
		})
	}
}

func TestSnapshotEncoding(t *testing.T) {
	cs := &raftpb.ConfState{Voters: []uint64{1, 2}}
	csBytes, err := proto.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	withCS := append([]byte{0x08, 0x05, 0x10, 0x02, 0x1a, byte(len(csBytes))}, csBytes...)
	tests := []struct {
		name string
		snap Snapshot
		want []byte
	}{
		{"initial empty snapshot", Snapshot{}, []byte{0x08, 0x00, 0x10, 0x00}},
		{"with conf state", Snapshot{Index: 5, Term: 2, ConfState: cs}, withCS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.snap.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("got % x, want % x", got, tt.want)
			}
			var back Snapshot
			if err := back.Unmarshal(got); err != nil {
				t.Fatal(err)
			}
			if back.Index != tt.snap.Index || back.Term != tt.snap.Term || !proto.Equal(back.ConfState, tt.snap.ConfState) {
				t.Fatalf("round trip: %+v", back)
			}
		})
	}
}

func TestUnmarshalRejectsGarbage(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"truncated varint", []byte{0x08, 0x80}},
		{"truncated bytes", []byte{0x1a, 0x05, 'a'}},
		{"wrong wire type", []byte{0x0a, 0x00}},
		{"bad tag", []byte{0x00}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Record
			if err := r.Unmarshal(tt.in); err == nil {
				t.Fatalf("Record.Unmarshal(% x) succeeded", tt.in)
			}
		})
	}
}

func TestUnmarshalSkipsUnknownFields(t *testing.T) {
	in := []byte{0x08, 0x02, 0x20, 0x07, 0x10, 0x03}
	var r Record
	if err := r.Unmarshal(in); err != nil {
		t.Fatal(err)
	}
	if r.Type != 2 || r.Crc != 3 {
		t.Fatalf("%+v", r)
	}
}
