package procfs

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadMemory(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "10", "status"), "Name:\tcairn\nVmPeak:\t 900 kB\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n")
	writeFile(t, filepath.Join(root, "11", "status"), "Name:\tkworker\n")
	writeFile(t, filepath.Join(root, "12", "status"), "Name:\todd\nVmHWM:\t1 MB\nVmRSS:\t1 kB\n")
	got, err := ReadMemory(root, 10)
	if err != nil || got != (Memory{PID: 10, Name: "cairn", PeakRSSBytes: 2 << 20, RSSBytes: 1 << 20}) {
		t.Errorf("ReadMemory = %+v, %v", got, err)
	}
	for _, pid := range []int{11, 12, 13} {
		if _, err := ReadMemory(root, pid); err == nil {
			t.Errorf("pid %d: no error", pid)
		}
	}
}

func TestParseProcessStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "42 (a) (b c) S 1 42 42 0 -1 4194560 100 0 0 0 150 25 7 3 20 0 8 0 100 1000 50\n"
	got, err := parseProcessStat(line)
	if err != nil || got != (ProcessCPU{Own: 175, Children: 10}) {
		t.Errorf("parseProcessStat = %+v, %v; want own 175, children 10", got, err)
	}
	for _, bad := range []string{"", "42 no-parens S 1", "42 (x) S 1 2 3", "42 (x) S 1 42 42 0 -1 0 0 0 0 0 u 1 2 3"} {
		if _, err := parseProcessStat(bad); err == nil {
			t.Errorf("parseProcessStat(%q): no error", bad)
		}
	}
}

func TestParseMachineStat(t *testing.T) {
	tests := []struct {
		line string
		want MachineCPU
		bad  bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{line: "cpu  100 10 50 1000 40 5 5 2 30 0", want: MachineCPU{Busy: 172, Total: 1212}},
		{line: "cpu 1 2 3 4 5 6 7", want: MachineCPU{Busy: 19, Total: 28}}, // no steal
		{line: "cpu0 1 2 3 4 5 6 7 8", bad: true},
		{line: "cpu 1 2 x 4 5 6 7 8", bad: true},
	}
	for _, tt := range tests {
		got, err := parseMachineStat(tt.line)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("parseMachineStat(%q) = %+v, %v", tt.line, got, err)
		}
	}
}

func TestReadLoadAvg(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "loadavg"), "1.50 0.75 0.25 3/400 1234\n")
	if got, err := ReadLoadAvg(root); err != nil || got != (LoadAvg{1.5, 0.75, 0.25}) {
		t.Errorf("ReadLoadAvg = %v, %v", got, err)
	}
}

func TestThisProcess(t *testing.T) {
	if _, err := os.Stat(filepath.Join(Root, "self", "stat")); err != nil {
		t.Skip("no /proc here")
	}
	if _, err := ReadProcessCPU(Root, 0); err != nil {
		t.Error(err)
	}
	if _, err := ReadMachineCPU(Root); err != nil {
		t.Error(err)
	}
	if m, err := ReadMemory(Root, os.Getpid()); err != nil || m.RSSBytes <= 0 {
		t.Errorf("own memory %+v, %v", m, err)
	}
}
