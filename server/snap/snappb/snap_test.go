package snappb

import (
	"bytes"
	"testing"
)

func TestEncoding(t *testing.T) {
	tests := []struct {
		name string
		in   Snapshot
		want []byte
	}{
		{"zero crc still written", Snapshot{Data: []byte{}}, []byte{0x08, 0x00, 0x12, 0x00}},
		{"crc and data", Snapshot{Crc: 200, Data: []byte("hi")}, []byte{0x08, 0xc8, 0x01, 0x12, 0x02, 'h', 'i'}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.Marshal()
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("got % x, want % x", got, tt.want)
			}
			var back Snapshot
			if err := back.Unmarshal(got); err != nil || back.Crc != tt.in.Crc || !bytes.Equal(back.Data, tt.in.Data) {
				t.Fatalf("round trip %+v, %v", back, err)
			}
		})
	}
	var s Snapshot
	for _, bad := range [][]byte{{0x08}, {0x12, 0x05}, {0x0a, 0x00}} {
		if err := s.Unmarshal(bad); err == nil {
			t.Fatalf("Unmarshal(% x) succeeded", bad)
		}
	}
}
