package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// loadArgs is the benchmark tool's command line for one version: every
// key once, in order, 16-byte keys and 256-byte values.
func loadArgs(cfg config, endpoint, reportJSON string) []string {
	keys := strconv.FormatInt(cfg.keys, 10)
	return []string{
		"--endpoints", endpoint,
		"--clients", strconv.Itoa(cfg.clients),
		"--conns", strconv.Itoa(cfg.conns),
		"--no-progress",
		"--report-json", reportJSON,
		"put", "--total", keys, "--key-space-size", keys, "--sequential-keys",
		"--key-size", "16", "--val-size", "256",
	}
}

// loadVersion writes one version of every key with the benchmark tool,
// keeping its text and JSON reports in the output directory, then records
// the load's figures and the sizes after it.
func (r *runner) loadVersion(ctx context.Context, s *server, version int) error {
	base := filepath.Join(r.cfg.out, fmt.Sprintf("%s-load-v%d", s.name, version))
	out, err := os.Create(base + ".txt")
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, r.cfg.benchBin, loadArgs(r.cfg, s.member().ClientURL, base+".json")...)
	cmd.Stdout = out
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("load v%d: %w\n%s%v", version, err, stderr.String(), s.member().Alive())
	}
	raw, err := os.ReadFile(base + ".json")
	if err != nil {
		return err
	}
	load, err := parseLoad(raw)
	if err != nil {
		return fmt.Errorf("load v%d: %w", version, err)
	}
	sizes, err := measureSizes(ctx, s.member(), r.procRoot)
	if err != nil {
		return fmt.Errorf("sizes after v%d: %w", version, err)
	}
	s.res.Versions = append(s.res.Versions, versionResult{Version: version, Load: load, Sizes: sizes})
	return nil
}

// benchJSON is the part of the benchmark tool's JSON report used here.
type benchJSON struct {
	Succeeded    int64   `json:"succeeded"`
	Failed       int64   `json:"failed"`
	NotSent      int64   `json:"not_sent"`
	TotalSeconds float64 `json:"total_seconds"`
	PerSec       float64 `json:"requests_per_sec"`
	Percentiles  []struct {
		P       float64 `json:"p"`
		Seconds float64 `json:"seconds"`
	} `json:"percentiles"`
}

func parseLoad(raw []byte) (loadResult, error) {
	var b benchJSON
	if err := json.Unmarshal(raw, &b); err != nil {
		return loadResult{}, err
	}
	l := loadResult{
		Succeeded: b.Succeeded, Failed: b.Failed + b.NotSent,
		Seconds: b.TotalSeconds, OpsPerSec: b.PerSec,
	}
	for _, p := range b.Percentiles {
		switch p.P {
		case 50:
			l.P50 = p.Seconds
		case 99:
			l.P99 = p.Seconds
		}
	}
	return l, nil
}
