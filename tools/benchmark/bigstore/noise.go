package main

import (
	"errors"
	"time"

	"github.com/cairnkv/cairn/tools/benchmark/procfs"
)

// cpuMark is a reading of the machine's and our own CPU time. "Ours" is
// this process, its children that have exited (the load generator, a
// stopped server) and the server running now; the machine's busy time
// minus ours, over a phase, is what other processes used.
type cpuMark struct {
	at      time.Time
	machine procfs.Ticks
	ours    procfs.Ticks
	load    procfs.LoadAvg
	ok      bool
}

// readCPUMark reads a cpuMark; serverPID 0 means no server runs.
func readCPUMark(root string, serverPID int, now time.Time) (cpuMark, error) {
	m := cpuMark{at: now}
	machine, err1 := procfs.ReadMachineCPU(root)
	self, err2 := procfs.ReadProcessCPU(root, 0)
	load, err3 := procfs.ReadLoadAvg(root)
	if err := errors.Join(err1, err2, err3); err != nil {
		return m, err
	}
	m.machine, m.load = machine.Busy, load
	m.ours = self.Own + self.Children
	if serverPID != 0 {
		srv, err := procfs.ReadProcessCPU(root, serverPID)
		if err != nil {
			return m, err
		}
		m.ours += srv.Own
	}
	m.ok = true
	return m, nil
}

// phaseNoise summarises a phase from the marks at its start and end.
// CPU figures are in cores (CPU seconds per wall-clock second); other
// processes' CPU cannot be negative, so rounding between the readings is
// clamped away.
func phaseNoise(server, phase string, before, after cpuMark) phaseFigures {
	f := phaseFigures{Server: server, Phase: phase, Seconds: after.at.Sub(before.at).Seconds()}
	if !before.ok || !after.ok || f.Seconds <= 0 {
		return f
	}
	f.Load1Start, f.Load1End = before.load[0], after.load[0]
	ours := (after.ours - before.ours).Seconds()
	busy := (after.machine - before.machine).Seconds()
	f.OwnCores = ours / f.Seconds
	f.OtherCores = max(busy-ours, 0) / f.Seconds
	return f
}
