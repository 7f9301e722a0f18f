package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// fakeProc writes a /proc-like tree: pid -> (comm, status).
func fakeProc(t *testing.T, procs map[int][2]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, files := range procs {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(files[0]+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "status"), []byte(files[1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Entries that are not processes must be skipped.
	if err := os.WriteFile(filepath.Join(root, "meminfo"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

const cairnStatus = "Name:\tcairn\nUmask:\t0022\nVmPeak:\t  900000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t   40000 kB\n"

func TestReadPeakRSS(t *testing.T) {
	root := fakeProc(t, map[int][2]string{
		10: {"cairn", cairnStatus},
		11: {"kworker", "Name:\tkworker\nUmask:\t0000\n"},
		12: {"odd", "Name:\todd\nVmHWM:\t12 MB\n"},
	})
	tests := []struct {
		pid     int
		want    int64
		wantErr bool
	}{
		{pid: 10, want: 51200 * 1024},
		{pid: 11, wantErr: true}, // no memory lines
		{pid: 12, wantErr: true}, // not in kB
		{pid: 13, wantErr: true}, // no such process
	}
	for _, tt := range tests {
		mem, err := readPeakRSS(root, tt.pid)
		if (err != nil) != tt.wantErr {
			t.Errorf("pid %d: err = %v, want error %v", tt.pid, err, tt.wantErr)
			continue
		}
		if err == nil && (mem.PeakRSSBytes != tt.want || mem.Name != "cairn" || mem.PID != tt.pid) {
			t.Errorf("pid %d: %+v, want %d bytes", tt.pid, mem, tt.want)
		}
	}
}

func TestServerPIDs(t *testing.T) {
	root := fakeProc(t, map[int][2]string{
		10: {"cairn", cairnStatus},
		20: {"cairn", cairnStatus},
		30: {"etcd", cairnStatus},
	})
	old := procRoot
	procRoot = root
	defer func() { procRoot = old }()

	tests := []struct {
		name, pids, procName string
		want                 []int
		usage, fails         bool
	}{
		{name: "none asked", want: nil},
		{name: "list of pids", pids: "30, 10", want: []int{30, 10}},
		{name: "by name", procName: "cairn", want: []int{10, 20}},
		{name: "both", pids: "30", procName: "cairn", want: []int{30, 10, 20}},
		{name: "not a number", pids: "ten", usage: true, fails: true},
		{name: "zero", pids: "0", usage: true, fails: true},
		{name: "no such pid", pids: "99", fails: true},
		{name: "no such name", procName: "zookeeper", fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := defaultGlobalConfig()
			g.rssPIDs, g.rssProcessName = tt.pids, tt.procName
			got, err := g.serverPIDs()
			if (err != nil) != tt.fails || (tt.usage && !errors.Is(err, errUsage)) {
				t.Fatalf("err = %v, want failure %v (usage %v)", err, tt.fails, tt.usage)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("pids = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("pids = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestServerMemoryOfThisProcess(t *testing.T) {
	mem, err := serverMemory([]int{os.Getpid()})
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if len(mem) != 1 || mem[0].PeakRSSBytes <= 0 {
		t.Errorf("memory of this process = %+v, want a positive peak", mem)
	}
}
