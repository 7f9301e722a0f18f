package peer

import (
	"bytes"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// The per-entry cost of the msgappv2 stream, hand codec against the
// generic protobuf calls it replaces (a MsgApp of 32 entries of 300 bytes,
// about what a put load under batching sends).
func BenchmarkEntryCodec(b *testing.B) {
	ents := appendMsg(1, 2, 5, 10, 32, 300).Entries
	var frames [][]byte
	for _, e := range ents {
		f, err := proto.Marshal(e)
		if err != nil {
			b.Fatal(err)
		}
		frames = append(frames, f)
	}
	encoders := map[string]func([]byte, *raftpb.Entry) ([]byte, error){
		"hand": appendEntry, "proto": appendEntryProto,
	}
	for name, enc := range encoders {
		b.Run("encode/"+name, func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				buf = buf[:0]
				for _, e := range ents {
					buf, _ = enc(buf, e)
				}
			}
		})
	}
	decoders := map[string]func([]byte) (*raftpb.Entry, error){
		"hand": unmarshalEntry,
		"proto": func(f []byte) (*raftpb.Entry, error) {
			e := &raftpb.Entry{}
			return e, proto.Unmarshal(f, e)
		},
	}
	for name, dec := range decoders {
		b.Run("decode/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, f := range frames {
					if _, err := dec(bytes.Clone(f)); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

func BenchmarkMessageDecode(b *testing.B) {
	resp := msg(raftpb.MsgAppResp, 2, 1, 3, 40)
	resp.Commit = proto.Uint64(39)
	prop := msg(raftpb.MsgProp, 2, 1, 0, 0)
	prop.Entries = appendMsg(1, 2, 5, 10, 16, 300).Entries
	for name, m := range map[string]*raftpb.Message{"MsgAppResp": resp, "MsgProp": prop} {
		f, err := proto.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/hand", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := unmarshalMessage(bytes.Clone(f)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/proto", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := proto.Unmarshal(bytes.Clone(f), &raftpb.Message{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
