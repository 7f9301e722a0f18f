package etcdserver

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// The Maintenance Downgrade API. A downgrade is a cluster-wide flag, set and
// cleared through raft (DowngradeInfoSetRequest) and kept in the cluster
// bucket under "downgrade" as {"target-version":"X.Y.0","enabled":bool}:
//
//   - VALIDATE checks that the target is exactly one minor version below the
//     cluster version and that no downgrade is in progress;
//   - ENABLE validates the same way, then records the target;
//   - CANCEL clears an enabled downgrade; with none in progress it succeeds
//     all the same (etcd from v3.6 only logs it).
//
// Every answer carries the cluster version as "X.Y". The target accepts
// "X.Y" or a full semantic version; only its major.minor count.

var keyDowngrade = []byte("downgrade")

// downgradeInfo is the stored form of a downgrade.
type downgradeInfo struct {
	TargetVersion string `json:"target-version"`
	Enabled       bool   `json:"enabled"`
}

// Downgrade serves Maintenance.Downgrade.
func (k *versionKeeper) Downgrade(ctx context.Context, r *pb.DowngradeRequest) (*pb.DowngradeResponse, error) {
	switch r.GetAction() {
	case pb.DowngradeRequest_VALIDATE, pb.DowngradeRequest_ENABLE:
		target, err := downgradeTarget(r.GetVersion())
		if err != nil {
			return nil, err
		}
		if err := k.member.linearizableReadNotify(ctx); err != nil {
			return nil, err
		}
		cv, err := k.downgradeClusterVersion()
		if err != nil {
			return nil, err
		}
		if err := k.validateDowngrade(cv, target); err != nil {
			return nil, err
		}
		if r.GetAction() == pb.DowngradeRequest_ENABLE {
			req := &membershippb.DowngradeInfoSetRequest{Enabled: true, Ver: target}
			if _, err := k.member.propose(ctx, &pb.InternalRaftRequest{DowngradeInfoSet: req}); err != nil {
				return nil, err
			}
			k.lg.Info("the cluster is ready to downgrade", zap.String("target-version", target))
		}
		return &pb.DowngradeResponse{Header: k.member.Header(), Version: cv}, nil
	case pb.DowngradeRequest_CANCEL:
		if k.downgrade().Enabled {
			req := &membershippb.DowngradeInfoSetRequest{Enabled: false}
			if _, err := k.member.propose(ctx, &pb.InternalRaftRequest{DowngradeInfoSet: req}); err != nil {
				return nil, err
			}
		} else {
			k.lg.Warn("failed to cancel downgrade", zap.Error(rpctypes.ErrNoInflightDowngrade))
		}
		cv, err := k.downgradeClusterVersion()
		if err != nil {
			return nil, err
		}
		return &pb.DowngradeResponse{Header: k.member.Header(), Version: cv}, nil
	}
	return nil, errUnknownMethod
}

var errUnknownMethod = errors.New("etcdserver: unknown method")

// validateDowngrade checks target against cluster version cv ("X.Y").
func (k *versionKeeper) validateDowngrade(cv, target string) error {
	major, minor, ok := majorMinor(cv)
	if !ok || minor == 0 {
		return rpctypes.ErrGRPCInvalidDowngradeTargetVersion
	}
	if target != strconv.Itoa(major)+"."+strconv.Itoa(minor-1)+".0" {
		return rpctypes.ErrGRPCInvalidDowngradeTargetVersion
	}
	if k.downgrade().Enabled {
		return rpctypes.ErrGRPCDowngradeInProcess
	}
	return nil
}

// downgradeClusterVersion is the cluster version as "X.Y".
func (k *versionKeeper) downgradeClusterVersion() (string, error) {
	v := k.clusterVersion()
	major, minor, ok := majorMinor(v)
	if !ok {
		return "", rpctypes.ErrGRPCClusterVersionUnavailable
	}
	return strconv.Itoa(major) + "." + strconv.Itoa(minor), nil
}

// downgradeTarget parses a target as "X.Y.Z[-pre][+meta]" or "X.Y" and
// returns "X.Y.0".
func downgradeTarget(v string) (string, error) {
	if !isSemver(v) {
		if !isSemver(v + ".0") {
			return "", rpctypes.ErrGRPCWrongDowngradeVersionFormat
		}
		v += ".0"
	}
	major, minor, _ := majorMinor(v)
	return strconv.Itoa(major) + "." + strconv.Itoa(minor) + ".0", nil
}

func isSemver(v string) bool {
	rest, meta, hasMeta := strings.Cut(v, "+")
	core, pre, hasPre := strings.Cut(rest, "-")
	if (hasPre && pre == "") || (hasMeta && meta == "") {
		return false
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if _, err := strconv.ParseUint(p, 10, 64); err != nil {
			return false
		}
	}
	return true
}

func majorMinor(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	a, err1 := strconv.Atoi(parts[0])
	b, err2 := strconv.Atoi(parts[1])
	return a, b, err1 == nil && err2 == nil
}

// applyDowngradeInfo applies a DowngradeInfoSetRequest (apply loop).
func (k *versionKeeper) applyDowngradeInfo(be backend.Backend, r *membershippb.DowngradeInfoSetRequest) {
	d := downgradeInfo{Enabled: r.GetEnabled()}
	if d.Enabled {
		d.TargetVersion = r.GetVer()
	}
	b, err := json.Marshal(d)
	if err != nil {
		return
	}
	tx := be.BatchTx()
	tx.Lock()
	tx.UnsafePut(backend.BucketCluster, keyDowngrade, b)
	tx.Unlock()
	if d.Enabled {
		k.lg.Info("enabled downgrade", zap.String("target-version", d.TargetVersion))
	} else {
		k.lg.Info("cancelled downgrade")
	}
}

// downgrade is the downgrade as applied.
func (k *versionKeeper) downgrade() downgradeInfo {
	var d downgradeInfo
	k.member.withStores(func(be backend.Backend) { d = downgradeOf(be) })
	return d
}

// downgradeOf reads the downgrade stored in be.
func downgradeOf(be backend.Backend) downgradeInfo {
	var d downgradeInfo
	if v := readBucketValue(be, backend.BucketCluster, keyDowngrade); v != "" {
		_ = json.Unmarshal([]byte(v), &d)
	}
	return d
}
