package config

import (
	"fmt"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestQuotaNotices: etcd v3.7.3's start-up lines for each kind of
// --quota-backend-bytes, field for field (taken from its log).
func TestQuotaNotices(t *testing.T) {
	tests := []struct {
		quota string
		want  []string
	}{
		{"-1", []string{`info disabled backend quota map[quota-name:v3-applier quota-size-bytes:-1]`}},
		{"0", []string{`info enabled backend quota with default value map[quota-name:v3-applier quota-size:2.1 GB quota-size-bytes:2147483648]`}},
		{"9000000000", []string{
			`warn quota exceeds the maximum value map[quota-maximum-size:8.6 GB quota-maximum-size-bytes:8589934592 quota-name:v3-applier quota-size:9.0 GB quota-size-bytes:9000000000]`,
			`info enabled backend quota map[quota-name:v3-applier quota-size:9.0 GB quota-size-bytes:9000000000]`,
		}},
		{"8589934592", []string{`info enabled backend quota map[quota-name:v3-applier quota-size:8.6 GB quota-size-bytes:8589934592]`}},
	}
	for _, tc := range tests {
		t.Run(tc.quota, func(t *testing.T) {
			c := mustParse(t, []string{"--quota-backend-bytes=" + tc.quota}, nil)
			core, logs := observer.New(zapcore.DebugLevel)
			c.LogNotices(zap.New(core))
			var got []string
			for _, e := range logs.FilterMessageSnippet("quota").All() {
				got = append(got, fmt.Sprintf("%v %s %v", e.Level, e.Message, e.ContextMap()))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("quota lines:\n%q\nwant:\n%q", got, tc.want)
			}
		})
	}
}

func TestSIBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 9: "9 B", 999: "999 B", 1000: "1.0 kB", 4096: "4.1 kB", 99_500: "100 kB",
		2147483648: "2.1 GB", 17_000_000_000: "17 GB", 8589934592: "8.6 GB",
	} {
		if got := siBytes(n); got != want {
			t.Errorf("siBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
