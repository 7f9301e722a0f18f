package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// featureGateDefaults are etcd v3.7's server feature gates.
var featureGateDefaults = map[string]bool{
	"StopGRPCServiceOnDefrag":      false,
	"InitialCorruptCheck":          false,
	"CompactHashCheck":             false,
	"TxnModeWriteWithSharedBuffer": true,
	"LeaseCheckpoint":              false,
	"LeaseCheckpointPersist":       false,
	"SetMemberLocalAddr":           false,
	"FastLeaseKeepAlive":           true,
	"PriorityRequest":              false,
}

// harmlessFeatureGates only change how fast cairn works, never what it
// does, so cairn accepts any value for them.
var harmlessFeatureGates = map[string]bool{
	"TxnModeWriteWithSharedBuffer": true,
}

// honouredFeatureGates are implemented by cairn, which accepts any value
// for them. LeaseCheckpoint: the leader checkpoints remaining lease TTLs
// through raft. LeaseCheckpointPersist: cairn, like etcd at cluster
// version 3.6 and later, always stores applied checkpoints in the lease
// bucket, so the gate changes nothing but is accepted (etcd requires
// LeaseCheckpoint with it; see validateMisc). InitialCorruptCheck and
// CompactHashCheck: etcd's corruption checks (server/etcdserver/corrupt.go).
// StopGRPCServiceOnDefrag: the gRPC health service reports NOT_SERVING
// during a defragmentation (server/v3rpc/health.go). SetMemberLocalAddr:
// peer connections leave from the advertised peer IP (InferLocalAddr).
// PriorityRequest: LeaseRevoke passes a longer apply backlog.
// FastLeaseKeepAlive: off, every renewal on the leader waits for its
// applied index.
var honouredFeatureGates = map[string]bool{
	"LeaseCheckpoint":         true,
	"LeaseCheckpointPersist":  true,
	"StopGRPCServiceOnDefrag": true,
	"SetMemberLocalAddr":      true,
	"PriorityRequest":         true,
	"FastLeaseKeepAlive":      true,
	"InitialCorruptCheck":     true,
	"CompactHashCheck":        true,
}

// cairnGateDefault is a gate's default where cairn's differs from etcd's
// (see README, "cairn extensions"): lease checkpointing is on, because
// without it a lease outlives every leader change (etcd issue 9888).
// LeaseCheckpointPersist follows LeaseCheckpoint unless set, so that
// --feature-gates=LeaseCheckpoint=false alone restores etcd's behaviour.
func (c *Config) cairnGateDefault(gate string) (enabled, ok bool) {
	switch gate {
	case "LeaseCheckpoint":
		return true, true
	case "LeaseCheckpointPersist":
		return c.FeatureEnabled("LeaseCheckpoint"), true
	}
	return false, false
}

// The k8s-style meta gates that switch every alpha or beta gate.
const (
	gateAllAlpha = "AllAlpha"
	gateAllBeta  = "AllBeta"
)

var betaGates = map[string]bool{"TxnModeWriteWithSharedBuffer": true, "FastLeaseKeepAlive": true}

// FeatureEnabled reports a gate's effective value.
func (c *Config) FeatureEnabled(gate string) bool {
	if v, ok := c.FeatureGates[gate]; ok {
		return v
	}
	meta := gateAllAlpha
	if betaGates[gate] {
		meta = gateAllBeta
	}
	if v, ok := c.FeatureGates[meta]; ok {
		return v
	}
	if v, ok := c.cairnGateDefault(gate); ok {
		return v
	}
	return featureGateDefaults[gate]
}

// parseFeatureGates merges "Gate=bool,Gate=bool" into dst, with etcd's
// messages for malformed input.
func parseFeatureGates(dst map[string]bool, value string) error {
	parsed := make(map[string]bool)
	for _, item := range strings.Split(value, ",") {
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok {
			return fmt.Errorf("missing bool value for %s", k)
		}
		v = strings.TrimSpace(v)
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("invalid value of %s=%s, err: %w", k, v, err)
		}
		parsed[k] = b
	}
	for k, b := range parsed {
		if _, known := featureGateDefaults[k]; !known && k != gateAllAlpha && k != gateAllBeta {
			return fmt.Errorf("unrecognized feature gate: %s", k)
		}
		dst[k] = b
	}
	return nil
}

// featureGatesFlag is --feature-gates; repeated use merges, as in etcd.
type featureGatesFlag struct{ dst *map[string]bool }

func (f featureGatesFlag) Set(s string) error {
	if *f.dst == nil {
		*f.dst = map[string]bool{}
	}
	return parseFeatureGates(*f.dst, s)
}

func (f featureGatesFlag) String() string {
	if f.dst == nil {
		return ""
	}
	pairs := make([]string, 0, len(*f.dst))
	for k, v := range *f.dst {
		pairs = append(pairs, k+"="+strconv.FormatBool(v))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// unsupportedGates lists gates whose effective value differs from etcd's
// default, which cairn cannot honour yet.
func (c *Config) unsupportedGates() []string {
	var out []string
	for gate, def := range featureGateDefaults {
		if !harmlessFeatureGates[gate] && !honouredFeatureGates[gate] && c.FeatureEnabled(gate) != def {
			out = append(out, gate)
		}
	}
	sort.Strings(out)
	return out
}

// FeatureGate is one gate's stage and effective value, as etcd exports
// them in etcd_server_feature_enabled.
type FeatureGate struct {
	Name, Stage string
	Enabled     bool
}

// FeatureGateStates lists every gate, the AllAlpha and AllBeta meta gates
// included, in name order.
func (c *Config) FeatureGateStates() []FeatureGate {
	out := []FeatureGate{
		{Name: gateAllAlpha, Stage: "ALPHA", Enabled: c.FeatureGates[gateAllAlpha]},
		{Name: gateAllBeta, Stage: "BETA", Enabled: c.FeatureGates[gateAllBeta]},
	}
	for gate := range featureGateDefaults {
		stage := "ALPHA"
		if betaGates[gate] {
			stage = "BETA"
		}
		out = append(out, FeatureGate{Name: gate, Stage: stage, Enabled: c.FeatureEnabled(gate)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
