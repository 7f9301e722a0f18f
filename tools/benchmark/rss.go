package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cairnkv/cairn/tools/benchmark/procfs"
	"github.com/cairnkv/cairn/tools/benchmark/stats"
)

// procRoot is where the kernel's process files are; tests point it at a
// fake tree.
var procRoot = procfs.Root

// serverPIDs resolves --rss-pid and --rss-process-name to process IDs
// before the run, so that a typo fails at once instead of after minutes of
// load. It returns nil when neither flag is set.
func (g *globalConfig) serverPIDs() ([]int, error) {
	pids, err := parsePIDs(g.rssPIDs)
	if err != nil {
		return nil, err
	}
	if g.rssProcessName != "" {
		found, err := findProcesses(procRoot, g.rssProcessName)
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("--rss-process-name: no process named %q", g.rssProcessName)
		}
		pids = append(pids, found...)
	}
	for _, pid := range pids {
		if _, err := readPeakRSS(procRoot, pid); err != nil {
			return nil, fmt.Errorf("--rss-pid: %w", err)
		}
	}
	return pids, nil
}

// parsePIDs parses a comma-separated list of process IDs.
func parsePIDs(list string) ([]int, error) {
	var pids []int
	for field := range strings.SplitSeq(list, ",") {
		if field = strings.TrimSpace(field); field == "" {
			continue
		}
		pid, err := strconv.Atoi(field)
		if err != nil || pid < 1 {
			return nil, fmt.Errorf("%w: --rss-pid wants process IDs, got %q", errUsage, field)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// findProcesses lists the processes whose command name (comm) is name,
// other than this one.
func findProcesses(root, name string) ([]int, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(root, e.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(comm)) == name {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// readPeakRSS reads a process's name and its peak resident set size
// (VmHWM) from <root>/<pid>/status.
func readPeakRSS(root string, pid int) (stats.ServerMemory, error) {
	mem, err := procfs.ReadMemory(root, pid)
	if err != nil {
		return stats.ServerMemory{}, err
	}
	return stats.ServerMemory{PID: pid, Name: mem.Name, PeakRSSBytes: mem.PeakRSSBytes}, nil
}

// serverMemory reads the peak RSS of every watched process after a run.
// It returns what it could read and an error naming any process that went
// away (a server that crashed under load), which the command reports after
// printing its report so that the failure is not mistaken for a result.
func serverMemory(pids []int) ([]stats.ServerMemory, error) {
	var out []stats.ServerMemory
	var errs []error
	for _, pid := range pids {
		mem, err := readPeakRSS(procRoot, pid)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, mem)
	}
	return out, errors.Join(errs...)
}
