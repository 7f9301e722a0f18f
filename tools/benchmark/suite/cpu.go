package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is Linux's USER_HZ, the unit of /proc's CPU times. It is 100
// on every architecture Linux supports from user space.
const clockTicks = 100

// cpuSample is what /proc says at one moment: the CPU time of each server
// process and of the whole machine.
type cpuSample struct {
	servers     float64 // seconds of CPU, all server processes together
	machineBusy float64 // seconds of non-idle CPU over all cores since boot
	load1       float64 // one-minute load average
}

// sampleCPU reads the servers' and the machine's CPU time from procRoot
// (normally /proc).
func sampleCPU(procRoot string, pids []int) (cpuSample, error) {
	var s cpuSample
	for _, pid := range pids {
		secs, err := processCPU(procRoot, pid)
		if err != nil {
			return s, err
		}
		s.servers += secs
	}
	busy, err := machineBusy(procRoot)
	if err != nil {
		return s, err
	}
	s.machineBusy = busy
	s.load1, err = loadAverage(procRoot)
	return s, err
}

// processCPU is a process's user plus system time in seconds
// (/proc/<pid>/stat fields 14 and 15).
func processCPU(procRoot string, pid int) (float64, error) {
	raw, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields after its closing parenthesis.
	text := string(raw)
	end := strings.LastIndexByte(text, ')')
	if end < 0 {
		return 0, fmt.Errorf("%s/%d/stat: no command name", procRoot, pid)
	}
	fields := strings.Fields(text[end+1:]) // fields[0] is field 3 (state)
	if len(fields) < 13 {
		return 0, fmt.Errorf("%s/%d/stat: %d fields", procRoot, pid, len(fields)+2)
	}
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%s/%d/stat: bad CPU times %q %q", procRoot, pid, fields[11], fields[12])
	}
	return float64(utime+stime) / clockTicks, nil
}

// machineBusy is the CPU time all cores spent doing anything but idling or
// waiting for I/O, from the first line of /proc/stat.
func machineBusy(procRoot string) (float64, error) {
	raw, err := os.ReadFile(filepath.Join(procRoot, "stat"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, fmt.Errorf("%s/stat: unexpected first line %q", procRoot, line)
	}
	var busy uint64
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/stat: %q: %w", procRoot, f, err)
		}
		// user nice system idle iowait irq softirq steal [guest guest_nice]:
		// guest time is already counted in user.
		if i != 3 && i != 4 && i < 8 {
			busy += v
		}
	}
	return float64(busy) / clockTicks, nil
}

func loadAverage(procRoot string) (float64, error) {
	raw, err := os.ReadFile(filepath.Join(procRoot, "loadavg"))
	if err != nil {
		return 0, err
	}
	first, _, _ := strings.Cut(string(raw), " ")
	return strconv.ParseFloat(first, 64)
}

// caseCPU is what one case cost: the servers' CPU, and how busy the rest
// of the machine was meanwhile.
type caseCPU struct {
	ServerSeconds float64 // servers' CPU during the case
	OtherCores    float64 // average cores used by processes other than the servers and the load generator
	Load1         float64 // one-minute load average at the end
}

// between measures a case from its before and after samples, its wall time
// and the load generator's own CPU time.
func between(before, after cpuSample, wallSeconds, benchSeconds float64) caseCPU {
	c := caseCPU{ServerSeconds: after.servers - before.servers, Load1: after.load1}
	if wallSeconds > 0 {
		other := after.machineBusy - before.machineBusy - c.ServerSeconds - benchSeconds
		c.OtherCores = max(other, 0) / wallSeconds
	}
	return c
}
