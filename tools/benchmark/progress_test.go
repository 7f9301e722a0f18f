package main

import (
	"bytes"
	"os"
	"testing"
	"time"
)

func TestRenderProgress(t *testing.T) {
	tests := []struct {
		done, total int64
		want        string
	}{
		{0, 10, "[>                                       ] 0/10   0% 0s"},
		{5, 10, "[====================>                   ] 5/10  50% 0s"},
		{10, 10, "[========================================] 10/10 100% 0s"},
		{12, 10, "[========================================] 10/10 100% 0s"}, // never past the end
	}
	for _, tt := range tests {
		if got := renderProgress(tt.done, tt.total, 300*time.Millisecond); got != tt.want {
			t.Errorf("renderProgress(%d, %d) =\n%q, want\n%q", tt.done, tt.total, got, tt.want)
		}
	}
}

func TestProgressOnlyOnTerminals(t *testing.T) {
	count := func() int64 { return 1 }
	g := defaultGlobalConfig()
	if p := startProgress(g, &bytes.Buffer{}, 10, count); p != nil {
		t.Error("a bar was drawn into a buffer")
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if p := startProgress(g, f, 10, count); p != nil {
		t.Error("a bar was drawn into a regular file")
	}
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no terminal to check --no-progress against: %v", err)
	}
	defer tty.Close()
	g.noProgress = true
	if p := startProgress(g, tty, 10, count); p != nil {
		t.Error("--no-progress did not turn the bar off")
	}
}
