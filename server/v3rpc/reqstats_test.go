package v3rpc

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
)

func TestStatsInterceptor(t *testing.T) {
	put := &pb.PutRequest{Key: []byte("k"), Value: []byte("secret-value")}
	tests := []struct {
		name    string
		level   zapcore.Level
		warn    time.Duration // the threshold; far from took either way
		took    time.Duration
		want    zapcore.Level // level of the "request stats" entry
		logged  bool
		content string
	}{
		{name: "fast at info", level: zapcore.InfoLevel, warn: time.Hour},
		{name: "slow at info", level: zapcore.InfoLevel, warn: time.Millisecond, took: 20 * time.Millisecond, logged: true, want: zapcore.WarnLevel, content: "value_size:12"},
		{name: "fast at debug", level: zapcore.DebugLevel, warn: time.Hour, logged: true, want: zapcore.DebugLevel, content: "value_size:12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(tt.level)
			icpt := statsInterceptor(zap.New(core), tt.warn)
			handler := func(context.Context, any) (any, error) {
				time.Sleep(tt.took) // the handler's duration decides, not a timing assertion
				return &pb.PutResponse{}, nil
			}
			if _, err := icpt(context.Background(), put, &grpc.UnaryServerInfo{FullMethod: "/etcdserverpb.KV/Put"}, handler); err != nil {
				t.Fatal(err)
			}
			entries := logs.FilterMessage("request stats").All()
			if !tt.logged {
				if len(entries) != 0 {
					t.Fatalf("logged %v", entries)
				}
				return
			}
			if len(entries) != 1 || entries[0].Level != tt.want {
				t.Fatalf("entries %v, want one at %v", entries, tt.want)
			}
			fields := entries[0].ContextMap()
			content, _ := fields["request content"].(string)
			if !strings.Contains(content, tt.content) || strings.Contains(content, "secret-value") {
				t.Fatalf("request content %q: want %q and no value", content, tt.content)
			}
			if fields["request count"] != int64(1) || fields["response type"] != "/etcdserverpb.KV/Put" {
				t.Fatalf("fields %v", fields)
			}
		})
	}
}
