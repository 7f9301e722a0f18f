package mvcc

import (
	"bytes"
	"math"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

func TestEncodeRevisionMatchesProto(t *testing.T) {
	tests := []struct {
		name string
		kv   *mvccpb.KeyValue
	}{
		{"empty", &mvccpb.KeyValue{}},
		{"key only", &mvccpb.KeyValue{Key: []byte("k")}},
		{"put", &mvccpb.KeyValue{Key: []byte("foo"), Value: []byte("bar"), CreateRevision: 2, ModRevision: 5, Version: 3}},
		{"lease", &mvccpb.KeyValue{Key: []byte("foo"), Value: []byte("bar"), CreateRevision: 1, ModRevision: 1, Version: 1, Lease: 0x7a3f1c}},
		{"empty value", &mvccpb.KeyValue{Key: []byte("foo"), Value: []byte{}, CreateRevision: 7, ModRevision: 7, Version: 1}},
		{"negative lease", &mvccpb.KeyValue{Key: []byte("k"), Lease: -1, ModRevision: 1}},
		{"large", &mvccpb.KeyValue{Key: bytes.Repeat([]byte("k"), 300), Value: bytes.Repeat([]byte{0xff}, 70000),
			CreateRevision: math.MaxInt64, ModRevision: math.MaxInt64, Version: math.MaxInt64, Lease: math.MinInt64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rev := Revision{Main: 1<<40 + 3, Sub: 9}
			revKey, value := encodeRevision(rev, tt.kv)
			if !bytes.Equal(revKey, RevToBytes(rev)) || cap(revKey) != revBytesLen {
				t.Fatalf("revision key %x (cap %d), want %x (cap %d)", revKey, cap(revKey), RevToBytes(rev), revBytesLen)
			}
			want, err := proto.Marshal(tt.kv)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(value, want) {
				t.Fatalf("encoded %x, proto.Marshal %x", value, want)
			}
		})
	}
}

func FuzzEncodeRevisionMatchesProto(f *testing.F) {
	f.Add([]byte("foo"), []byte("bar"), int64(1), int64(2), int64(3), int64(4))
	f.Add([]byte{}, []byte{}, int64(0), int64(-1), int64(0), int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, key, value []byte, created, mod, ver, lease int64) {
		kv := &mvccpb.KeyValue{Key: key, Value: value, CreateRevision: created, ModRevision: mod, Version: ver, Lease: lease}
		_, got := encodeRevision(Revision{Main: mod, Sub: 1}, kv)
		want, err := proto.Marshal(kv)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("encoded %x, proto.Marshal %x", got, want)
		}
	})
}
