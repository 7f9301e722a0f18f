// Package procfs reads the few Linux /proc figures the benchmark tools
// report: a process's memory (VmHWM, VmRSS), the CPU time a process and
// the whole machine have used, and the load average. Every reader takes
// the root of the tree ("/proc" in production) so tests can point it at a
// fake one.
//
// CPU times are in clock ticks (USER_HZ), the unit both /proc/stat and
// /proc/PID/stat use; Ticks converts them to seconds.
package procfs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Root is the real process tree.
const Root = "/proc"

// ticksPerSecond is USER_HZ, which Linux fixes at 100 on every
// architecture for the files read here.
const ticksPerSecond = 100

// Ticks is an amount of CPU time in clock ticks.
type Ticks int64

// Seconds converts t to seconds.
func (t Ticks) Seconds() float64 { return float64(t) / ticksPerSecond }

// Duration converts t to a time.Duration.
func (t Ticks) Duration() time.Duration { return time.Duration(t) * time.Second / ticksPerSecond }

// Memory is a process's name and memory as /proc/PID/status reports it.
type Memory struct {
	PID  int
	Name string
	// PeakRSSBytes is VmHWM: the largest resident set the process ever
	// had, so a spike between two samples is not missed.
	PeakRSSBytes int64
	// RSSBytes is VmRSS: the resident set now.
	RSSBytes int64
}

// ReadMemory reads the memory lines of <root>/<pid>/status. A process
// without them (a kernel thread or a zombie) is an error.
func ReadMemory(root string, pid int) (Memory, error) {
	f, err := os.Open(filepath.Join(root, strconv.Itoa(pid), "status"))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	mem := Memory{PID: pid, PeakRSSBytes: -1, RSSBytes: -1}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var err error
		switch key {
		case "Name":
			mem.Name = strings.TrimSpace(value)
		case "VmHWM":
			mem.PeakRSSBytes, err = parseKB(value)
		case "VmRSS":
			mem.RSSBytes, err = parseKB(value)
		}
		if err != nil {
			return Memory{}, fmt.Errorf("pid %d: %s: %w", pid, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return Memory{}, err
	}
	if mem.PeakRSSBytes < 0 || mem.RSSBytes < 0 {
		return Memory{}, fmt.Errorf("pid %d has no VmHWM/VmRSS line (kernel thread or exited?)", pid)
	}
	return mem, nil
}

// parseKB parses a status value such as "  123456 kB" into bytes.
func parseKB(value string) (int64, error) {
	fields := strings.Fields(value)
	if len(fields) != 2 || fields[1] != "kB" {
		return 0, fmt.Errorf("unexpected value %q", value)
	}
	n, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return 0, err
	}
	return n * 1024, nil
}

// ProcessCPU is the CPU time of one process from <root>/<pid>/stat.
type ProcessCPU struct {
	// Own is user + system time of the process's threads.
	Own Ticks
	// Children is user + system time of its children that have exited
	// and been waited for.
	Children Ticks
}

// ReadProcessCPU reads the CPU time of pid ("self" is accepted as
// pid 0).
func ReadProcessCPU(root string, pid int) (ProcessCPU, error) {
	name := "self"
	if pid != 0 {
		name = strconv.Itoa(pid)
	}
	raw, err := os.ReadFile(filepath.Join(root, name, "stat"))
	if err != nil {
		return ProcessCPU{}, err
	}
	return parseProcessStat(string(raw))
}

// parseProcessStat picks utime, stime, cutime and cstime (fields 14-17)
// out of a /proc/PID/stat line. The command name (field 2) is in
// parentheses and may itself hold spaces and parentheses, so fields are
// counted from the last ")".
func parseProcessStat(line string) (ProcessCPU, error) {
	end := strings.LastIndexByte(line, ')')
	if end < 0 {
		return ProcessCPU{}, fmt.Errorf("stat line without a command name: %q", line)
	}
	fields := strings.Fields(line[end+1:]) // fields[0] is field 3 (state)
	const utime = 14 - 3
	if len(fields) < utime+4 {
		return ProcessCPU{}, fmt.Errorf("stat line too short: %q", line)
	}
	var t [4]int64
	for i := range t {
		v, err := strconv.ParseInt(fields[utime+i], 10, 64)
		if err != nil {
			return ProcessCPU{}, fmt.Errorf("stat field %d: %w", 14+i, err)
		}
		t[i] = v
	}
	return ProcessCPU{Own: Ticks(t[0] + t[1]), Children: Ticks(t[2] + t[3])}, nil
}

// MachineCPU is the CPU time of all cores together from <root>/stat.
type MachineCPU struct {
	// Busy is every state but idle and iowait (guest time is already
	// counted in user).
	Busy Ticks
	// Total includes idle and iowait.
	Total Ticks
}

// ReadMachineCPU reads the "cpu" line of <root>/stat.
func ReadMachineCPU(root string) (MachineCPU, error) {
	raw, err := os.ReadFile(filepath.Join(root, "stat"))
	if err != nil {
		return MachineCPU{}, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	return parseMachineStat(line)
}

// parseMachineStat reads "cpu user nice system idle iowait irq softirq
// steal ..." (older kernels stop before steal).
func parseMachineStat(line string) (MachineCPU, error) {
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return MachineCPU{}, fmt.Errorf("unexpected first line of stat: %q", line)
	}
	var cpu MachineCPU
	for i, f := range fields[1:min(len(fields), 9)] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return MachineCPU{}, fmt.Errorf("stat cpu field %d: %w", i+1, err)
		}
		cpu.Total += Ticks(v)
		if i != 3 && i != 4 { // idle, iowait
			cpu.Busy += Ticks(v)
		}
	}
	return cpu, nil
}

// LoadAvg is the 1-, 5- and 15-minute load average.
type LoadAvg [3]float64

// ReadLoadAvg reads <root>/loadavg.
func ReadLoadAvg(root string) (LoadAvg, error) {
	raw, err := os.ReadFile(filepath.Join(root, "loadavg"))
	if err != nil {
		return LoadAvg{}, err
	}
	fields := strings.Fields(string(raw))
	if len(fields) < 3 {
		return LoadAvg{}, fmt.Errorf("unexpected loadavg %q", raw)
	}
	var l LoadAvg
	for i := range l {
		if l[i], err = strconv.ParseFloat(fields[i], 64); err != nil {
			return LoadAvg{}, fmt.Errorf("loadavg: %w", err)
		}
	}
	return l, nil
}
