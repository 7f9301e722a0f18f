package defaults

import (
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	tests := []struct {
		name    string
		v, want time.Duration
	}{
		{"set", 3 * time.Second, 3 * time.Second},
		{"smallest set", 1, 1},
		{"unset", 0, time.Minute},
		{"negative is unset", -time.Second, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Positive(tt.v, time.Minute); got != tt.want {
				t.Fatalf("Positive(%v, 1m) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
	if got := Positive(int64(-1), 5); got != 5 {
		t.Fatalf("Positive(int64(-1), 5) = %d", got)
	}
	if got := Positive(0.5, 2.0); got != 0.5 {
		t.Fatalf("Positive(0.5, 2) = %v", got)
	}
}
