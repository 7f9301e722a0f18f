package etcdserver

import (
	"context"
	"fmt"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// BenchmarkPutSerial measures the member's own latency for one put at a
// time (no gRPC): propose, WAL fsync, commit, apply, answer.
func BenchmarkPutSerial(b *testing.B) {
	for _, fsync := range []bool{true, false} {
		b.Run(fmt.Sprintf("fsync=%v", fsync), func(b *testing.B) {
			t := &testing.T{}
			cfg := testConfig(b.TempDir())
			cfg.UnsafeNoFsync = !fsync
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			s.Start()
			defer s.Stop()
			<-s.ReadyNotify()
			_ = t
			val := make([]byte, 256)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.KV().Put(ctx, &pb.PutRequest{Key: []byte(fmt.Sprintf("k%d", i%1000)), Value: val}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRangeLinearizableSerial measures one read barrier plus a read.
func BenchmarkRangeLinearizableSerial(b *testing.B) {
	cfg := testConfig(b.TempDir())
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s.Start()
	defer s.Stop()
	<-s.ReadyNotify()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.KV().Range(ctx, &pb.RangeRequest{Key: []byte("k")}); err != nil {
			b.Fatal(err)
		}
	}
}
