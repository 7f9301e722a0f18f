package main

import (
	"runtime"
	"time"
)

// result is everything a run measured; report.json is this, indented.
type result struct {
	Started  time.Time                `json:"started"`
	Duration float64                  `json:"duration_seconds"`
	Machine  string                   `json:"machine"`
	Config   configJSON               `json:"config"`
	Servers  []string                 `json:"servers"`
	Runs     map[string]*serverResult `json:"runs"`
	Phases   []phaseFigures           `json:"phases"`
}

type configJSON struct {
	Keys              int64   `json:"keys"`
	KeyBytes          int     `json:"key_bytes"`
	ValueBytes        int     `json:"value_bytes"`
	Versions          int     `json:"versions"`
	Clients           int     `json:"clients"`
	Conns             int     `json:"conns"`
	QuotaBackendBytes int64   `json:"quota_backend_bytes"`
	Restarts          int     `json:"restarts"`
	SkipDefrag        bool    `json:"skip_defrag"`
	ProbeWindow       float64 `json:"probe_window_seconds"`
	ProbeInterval     float64 `json:"probe_interval_seconds"`
	ProbeKeys         int     `json:"probe_keys"`
}

func newResult(cfg config) *result {
	return &result{
		Started: time.Now(),
		Machine: runtime.GOOS + "/" + runtime.GOARCH + ", " + itoa(runtime.NumCPU()) + " CPUs, " + runtime.Version(),
		Config: configJSON{
			Keys: cfg.keys, KeyBytes: 16, ValueBytes: 256, Versions: 2,
			Clients: cfg.clients, Conns: cfg.conns, QuotaBackendBytes: cfg.quota,
			Restarts: cfg.restarts, SkipDefrag: cfg.skipDefrag,
			ProbeWindow: cfg.window.Seconds(), ProbeInterval: cfg.probeInterval.Seconds(), ProbeKeys: cfg.probeKeys,
		},
		Runs: map[string]*serverResult{},
	}
}

// serverResult is one server's figures.
type serverResult struct {
	Versions []versionResult `json:"versions"`
	// Stops lists every SIGTERM-to-exit time in order: after the load,
	// after each restart, after the maintenance.
	Stops      []float64          `json:"stop_seconds"`
	Restarts   []restartSample    `json:"restarts"`
	Compaction *maintenanceResult `json:"compaction,omitempty"`
	Defrag     *maintenanceResult `json:"defrag,omitempty"`
}

type versionResult struct {
	Version int        `json:"version"`
	Load    loadResult `json:"load"`
	Sizes   sizes      `json:"sizes_after"`
}

type loadResult struct {
	Succeeded int64   `json:"succeeded"`
	Failed    int64   `json:"failed"` // failed and not sent
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50       float64 `json:"p50_seconds"`
	P99       float64 `json:"p99_seconds"`
}

// sizes is a running member's memory and storage at one moment.
type sizes struct {
	Revision    int64 `json:"revision"`
	PeakRSS     int64 `json:"vm_hwm_bytes"`
	RSS         int64 `json:"vm_rss_bytes"`
	DBFile      int64 `json:"db_file_bytes"`
	DBSize      int64 `json:"db_size_bytes"`
	DBSizeInUse int64 `json:"db_size_in_use_bytes"`
	WAL         int64 `json:"wal_bytes"`
	DataDir     int64 `json:"data_dir_bytes"`
}

// restartSample is one restart: the SIGTERM that stopped the previous
// process and the start that followed.
type restartSample struct {
	StopSeconds     float64 `json:"stop_seconds"`
	ReadySeconds    float64 `json:"exec_to_ready_seconds"`
	FirstGetSeconds float64 `json:"exec_to_first_get_seconds"`
	RSSAtGet        int64   `json:"vm_rss_at_first_get_bytes"`
	PeakRSSAtGet    int64   `json:"vm_hwm_at_first_get_bytes"`
}

// maintenanceResult is one compaction or defragmentation under the probe.
type maintenanceResult struct {
	Revision    int64         `json:"revision,omitempty"`
	TookSeconds float64       `json:"took_seconds"`
	Error       string        `json:"error,omitempty"`
	Windows     []probeWindow `json:"probe_windows"`
	After       sizes         `json:"sizes_after"`
}

// probeWindow summarises the probe puts scheduled in one window.
type probeWindow struct {
	Name      string       `json:"name"`
	Seconds   float64      `json:"seconds"`
	Succeeded int64        `json:"succeeded"`
	Failed    int64        `json:"failed"`
	P50       float64      `json:"p50_seconds"`
	P99       float64      `json:"p99_seconds"`
	Max       float64      `json:"max_seconds"`
	Errors    []errorCount `json:"errors,omitempty"`
	// MaxSendDelay is the longest a put left after its scheduled time:
	// large values mean the probe itself was starved of CPU.
	MaxSendDelay float64 `json:"max_send_delay_seconds"`
	// WAL is what the server's own WAL fsyncs did in the window (see
	// walsync.go); nil if its metrics could not be read.
	WAL *walWindow `json:"wal_fsync,omitempty"`
}

// walWindow: the fsyncs slower than walStallThreshold, and the upper bound
// of the slowest one's histogram bucket.
type walWindow struct {
	Stalls       int64   `json:"over_32ms"`
	SlowestBound float64 `json:"slowest_bucket_seconds"`
}

type errorCount struct {
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// phaseFigures says how long a phase took and how busy the machine was.
type phaseFigures struct {
	Server     string  `json:"server"`
	Phase      string  `json:"phase"`
	Seconds    float64 `json:"seconds"`
	Load1Start float64 `json:"load1_start"`
	Load1End   float64 `json:"load1_end"`
	// OwnCores is the CPU the servers, the load generator and this tool
	// used; OtherCores what every other process used (both in cores).
	OwnCores   float64 `json:"own_cpu_cores"`
	OtherCores float64 `json:"other_cpu_cores"`
}
