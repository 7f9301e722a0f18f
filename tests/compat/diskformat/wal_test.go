package diskformat

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// WAL record types of etcd's wal package.
const (
	recMetadata = 1
	recEntry    = 2
	recState    = 3
	recCRC      = 4
	recSnapshot = 5
)

// walRecord is one decoded frame of a WAL segment.
type walRecord struct {
	Type int64
	CRC  uint32
	Data []byte
}

// readWAL decodes every frame of every .wal file in dir, in order. A frame
// is a little-endian uint64 whose low 56 bits are the record length and
// whose top byte, if its high bit is set, holds the padding length in its
// low 3 bits; a zero length ends a (preallocated) segment.
func readWAL(t *testing.T, dir string) []walRecord {
	t.Helper()
	var out []walRecord
	for _, name := range listFiles(t, dir, ".wal") {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+8 <= len(b); {
			lf := binary.LittleEndian.Uint64(b[off:])
			if lf == 0 {
				break
			}
			n := int(lf & (1<<56 - 1))
			pad := 0
			if lf&(1<<63) != 0 {
				pad = int((lf >> 56) & 0x7)
			}
			off += 8
			if off+n+pad > len(b) {
				t.Fatalf("%s: frame at %d runs past the end of the file", name, off-8)
			}
			if (n+pad)%8 != 0 {
				t.Errorf("%s: frame at %d is not 8-byte aligned (len %d pad %d)", name, off-8, n, pad)
			}
			rec, err := decodeRecord(b[off : off+n])
			if err != nil {
				t.Fatalf("%s: frame at %d: %v", name, off-8, err)
			}
			out = append(out, rec)
			off += n + pad
		}
	}
	return out
}

// decodeRecord parses walpb.Record{type=1 int64, crc=2 uint32, data=3 bytes}.
func decodeRecord(b []byte) (walRecord, error) {
	var r walRecord
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return r, protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return r, protowire.ParseError(n)
			}
			r.Type, b = int64(v), b[n:]
		case num == 2 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return r, protowire.ParseError(n)
			}
			r.CRC, b = uint32(v), b[n:]
		case num == 3 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return r, protowire.ParseError(n)
			}
			r.Data, b = v, b[n:]
		default:
			return r, fmt.Errorf("unexpected field %d (wire type %d) in a WAL record", num, typ)
		}
	}
	return r, nil
}

// walEntry is the comparable content of a logged raft entry: the request
// header (ID, user) is dropped because request IDs are time-based.
type walEntry struct {
	Index, Term uint64
	Type        raftpb.EntryType
	Desc        string
}

// walContent is a WAL as compared between etcd and cairn.
type walContent struct {
	Types    []int64 // record types except state and crc, in order
	Metadata []byte
	Entries  map[uint64]walEntry // last entry written for each index
	Snaps    []string
}

func walSummary(t *testing.T, who string, recs []walRecord) walContent {
	t.Helper()
	c := walContent{Entries: map[uint64]walEntry{}}
	for i, r := range recs {
		switch r.Type {
		case recState, recCRC:
			continue
		case recMetadata:
			c.Metadata = r.Data
			var md pb.Metadata
			if err := proto.Unmarshal(r.Data, &md); err != nil {
				t.Errorf("%s: WAL record %d: metadata is not etcdserverpb.Metadata: %v", who, i, err)
			}
		case recEntry:
			var e raftpb.Entry
			if err := proto.Unmarshal(r.Data, &e); err != nil {
				t.Errorf("%s: WAL record %d: not a raftpb.Entry: %v", who, i, err)
				continue
			}
			we := walEntry{Index: e.GetIndex(), Term: e.GetTerm(), Type: e.GetType()}
			switch {
			case we.Type == raftpb.EntryType_EntryNormal && len(e.GetData()) == 0:
				we.Desc = "empty"
			case we.Type == raftpb.EntryType_EntryNormal:
				var req pb.InternalRaftRequest
				if err := proto.Unmarshal(e.Data, &req); err != nil {
					t.Errorf("%s: entry %d: data is not an InternalRaftRequest: %v", who, e.GetIndex(), err)
					continue
				}
				if req.Header == nil || req.Header.ID == 0 {
					t.Errorf("%s: entry %d: InternalRaftRequest without a request ID header: %v", who, e.GetIndex(), &req)
				}
				req.Header = nil
				we.Desc = req.String()
			case we.Type == raftpb.EntryType_EntryConfChange:
				var cc raftpb.ConfChange
				if err := proto.Unmarshal(e.Data, &cc); err != nil {
					t.Errorf("%s: entry %d: not a ConfChange: %v", who, e.GetIndex(), err)
					continue
				}
				cc.Id = nil
				we.Desc = cc.String()
			default:
				we.Desc = fmt.Sprintf("%x", e.GetData())
			}
			c.Entries[we.Index] = we
		case recSnapshot:
			c.Snaps = append(c.Snaps, fmt.Sprintf("%x", r.Data))
		default:
			t.Errorf("%s: WAL record %d has unknown type %d", who, i, r.Type)
		}
		c.Types = append(c.Types, r.Type)
	}
	return c
}

// compareWALs compares what etcd and cairn logged for the same workload.
func compareWALs(t *testing.T, e, c walContent) {
	if string(e.Metadata) != string(c.Metadata) {
		t.Errorf("WAL metadata record: cairn %x, etcd %x", c.Metadata, e.Metadata)
	}
	if len(e.Entries) != len(c.Entries) {
		t.Errorf("WAL holds %d distinct entry indexes in cairn's, %d in etcd's", len(c.Entries), len(e.Entries))
	}
	shown := 0
	for i := uint64(0); i <= uint64(len(e.Entries)+len(c.Entries)) && shown < 8; i++ {
		ee, eok := e.Entries[i]
		ce, cok := c.Entries[i]
		if eok != cok || ee != ce {
			t.Errorf("WAL entry %d: cairn %+v (present %v), etcd %+v (present %v)", i, ce, cok, ee, eok)
			shown++
		}
	}
	if fmt.Sprint(e.Snaps) != fmt.Sprint(c.Snaps) {
		t.Logf("DIFFERENCE WAL snapshot records: cairn %v, etcd %v", c.Snaps, e.Snaps)
	}
}

// snapFile is a decoded .snap file: snappb.Snapshot{crc=1, data=2} whose
// data is a raftpb.Snapshot; crc is CRC-32C of data.
type snapFile struct {
	Meta string // raftpb.SnapshotMetadata
	Data []byte // the application payload
}

func readSnap(t *testing.T, path string) snapFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crc uint32
	var data []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("%s: %v", path, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				t.Fatalf("%s: %v", path, protowire.ParseError(n))
			}
			crc, b = uint32(v), b[n:]
		case num == 2 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				t.Fatalf("%s: %v", path, protowire.ParseError(n))
			}
			data, b = v, b[n:]
		default:
			t.Fatalf("%s: unexpected field %d (wire type %d) in a snap file", path, num, typ)
		}
	}
	if got := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)); got != crc {
		t.Errorf("%s: crc %08x, but CRC-32C of the data is %08x", path, crc, got)
	}
	var s raftpb.Snapshot
	if err := proto.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: not a raftpb.Snapshot: %v", path, err)
	}
	return snapFile{Meta: s.GetMetadata().String(), Data: s.GetData()}
}
