package config

import (
	"testing"
	"time"
)

// The member flags implemented with auto compaction: values as parsed from
// flags, ETCD_* variables and the YAML file.
func TestMemberFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		get  func(*Config) any
		want any
	}{
		{"compaction off by default", nil, nil, retention, time.Duration(0)},
		{"periodic bare number is hours", []string{"--auto-compaction-retention=1"}, nil, retention, time.Hour},
		{"periodic duration", []string{"--auto-compaction-retention=2s"}, nil, retention, 2 * time.Second},
		{"revision count", []string{"--auto-compaction-mode=revision", "--auto-compaction-retention=10"}, nil, retention, time.Duration(10)},
		{"retention from env", nil, []string{"ETCD_AUTO_COMPACTION_RETENTION=5m"}, retention, 5 * time.Minute},
		{"mode from env", []string{"--auto-compaction-retention=1000"}, []string{"ETCD_AUTO_COMPACTION_MODE=revision"}, retention, time.Duration(1000)},
		{"mlock", []string{"--memory-mlock"}, nil, func(c *Config) any { return c.MemoryMlock }, true},
		{"defrag threshold", []string{"--bootstrap-defrag-threshold-megabytes=16"}, nil, func(c *Config) any { return c.BootstrapDefragThresholdMegabytes }, uint(16)},
		{"reuse port", []string{"--socket-reuse-port"}, nil, func(c *Config) any { return c.SocketOpts.ReusePort }, true},
		{"reuse address from env", nil, []string{"ETCD_SOCKET_REUSE_ADDRESS=true"}, func(c *Config) any { return c.SocketOpts.ReuseAddress }, true},
		{"raft read timeout", []string{"--raft-read-timeout=7s"}, nil, func(c *Config) any { return c.RaftReadTimeout }, 7 * time.Second},
		{"raft write timeout", []string{"--raft-write-timeout=1m"}, nil, func(c *Config) any { return c.RaftWriteTimeout }, time.Minute},
		{"raft read timeout raised", []string{"--raft-read-timeout=1s"}, nil, func(c *Config) any { return c.RaftReadTimeout }, 5 * time.Second},
		{"raft write timeout raised", []string{"--raft-write-timeout=0"}, nil, func(c *Config) any { return c.RaftWriteTimeout }, 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.get(mustParse(t, tc.args, tc.env)); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func retention(c *Config) any {
	d, err := c.CompactionRetention()
	if err != nil {
		return err
	}
	return d
}

func TestRaftTimeoutNotices(t *testing.T) {
	c := mustParse(t, []string{"--raft-read-timeout=1s", "--raft-write-timeout=2s"}, nil)
	for _, msg := range []string{"raft-read-timeout increased to minimum value: 5s", "raft-write-timeout increased to minimum value: 5s"} {
		if !hasNotice(c, msg) {
			t.Errorf("missing notice %q in %+v", msg, c.Notices)
		}
	}
	if c := mustParse(t, []string{"--raft-read-timeout=6s"}, nil); hasNotice(c, "raft-read-timeout increased to minimum value: 5s") {
		t.Error("a timeout above the minimum was reported as raised")
	}
}

// Errors in etcd's words.
func TestMemberFlagErrors(t *testing.T) {
	checkParseErrors(t, []parseErrorCase{
		{"retention not a duration", []string{"--auto-compaction-retention=abc"}, nil, `error parsing CompactionRetention: time: invalid duration "abc"`, false},
		{"negative hours", []string{"--auto-compaction-retention=-1"}, nil, `error parsing CompactionRetention: time: missing unit in duration "-1"`, false},
		{"revision not an integer", []string{"--auto-compaction-mode=revision", "--auto-compaction-retention=1.5"}, nil, `error parsing CompactionRetention: time: missing unit in duration "1.5"`, false},
		{"retention from env", nil, []string{"ETCD_AUTO_COMPACTION_RETENTION=x"}, `error parsing CompactionRetention: time: invalid duration "x"`, false},
		{"unknown mode", []string{"--auto-compaction-mode=hourly"}, nil, `unknown auto-compaction-mode "hourly"`, false},
		{"empty mode", []string{"--auto-compaction-mode="}, nil, "undefined auto-compaction-mode", false},
		{"negative duration", []string{"--auto-compaction-retention=-1h"}, nil, `--auto-compaction-retention "-1h" must not be negative`, false},
		{"defrag threshold not a number", []string{"--bootstrap-defrag-threshold-megabytes=x"}, nil, `invalid value "x" for flag -bootstrap-defrag-threshold-megabytes: parse error`, true},
		{"mlock not a bool", []string{"--memory-mlock=maybe"}, nil, `invalid boolean value "maybe" for -memory-mlock: parse error`, true},
		{"raft timeout not a duration", []string{"--raft-read-timeout=5"}, nil, `invalid value "5" for flag -raft-read-timeout: parse error`, true},
	})
}

func TestMemberFlagsFromFile(t *testing.T) {
	c := mustParse(t, []string{"--config-file", writeFile(t, `
auto-compaction-mode: revision
auto-compaction-retention: "100"
memory-mlock: true
bootstrap-defrag-threshold-megabytes: 8
socket-options:
  reuse-port: true
  reuse-address: true
`)}, nil)
	if d, err := c.CompactionRetention(); err != nil || d != 100 {
		t.Errorf("retention = %v, %v; want 100 revisions", d, err)
	}
	if !c.MemoryMlock || c.BootstrapDefragThresholdMegabytes != 8 || !c.SocketOpts.ReusePort || !c.SocketOpts.ReuseAddress {
		t.Errorf("file settings not applied: mlock %v, defrag %d, sockets %+v", c.MemoryMlock, c.BootstrapDefragThresholdMegabytes, c.SocketOpts)
	}
	_, err := Parse([]string{"--config-file", writeFile(t, "auto-compaction-retention: 1x\n")}, nil)
	if want := `error parsing CompactionRetention: time: unknown unit "x" in duration "1x"`; err == nil || err.Error() != want {
		t.Errorf("bad retention in file: %v, want %q", err, want)
	}
}
