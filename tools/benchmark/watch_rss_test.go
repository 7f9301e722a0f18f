package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestCurrentRSS(t *testing.T) {
	root := fakeProc(t, map[int][2]string{
		11: {"cairn", cairnStatus}, // VmRSS 40000 kB
		12: {"etcd", "Name:\tetcd\nVmHWM:\t   2000 kB\nVmRSS:\t   1000 kB\n"},
		13: {"odd", "Name:\todd\nVmHWM:\t12 kB\n"},
	})
	tests := []struct {
		pids    []int
		want    int64
		wantErr string
	}{
		{pids: nil, want: 0},
		{pids: []int{11}, want: 40000 << 10},
		{pids: []int{11, 12}, want: 41000 << 10},
		{pids: []int{13}, wantErr: "no VmHWM/VmRSS line"},
		{pids: []int{14}, wantErr: "no such file"},
	}
	for _, tt := range tests {
		got, err := currentRSS(root, tt.pids)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("currentRSS(%v) error = %v, want %q", tt.pids, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("currentRSS(%v) = %d, %v, want %d", tt.pids, got, err, tt.want)
		}
	}
}

func TestWatcherMemory(t *testing.T) {
	if m := newWatcherMemory(nil, 100, 0, 0); m != nil {
		t.Fatalf("no pids: got %+v, want none", m)
	}
	m := newWatcherMemory([]int{1}, 1000, 10<<20, 11<<20)
	if m.BytesPerWatcher != 1048.576 {
		t.Fatalf("per watcher = %v, want 1048.576", m.BytesPerWatcher)
	}
	var out bytes.Buffer
	if err := m.writeText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RSS before:\t10.0 MiB", "RSS after:\t11.0 MiB (1000 watchers)", "Per watcher:\t1049 bytes"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report %q lacks %q", out.String(), want)
		}
	}
}
