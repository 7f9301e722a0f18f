package etcdserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/apply"
	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// The cluster version, as etcd decides it: the leader looks at the server
// versions of all members (its own, and the others' over their peer URLs'
// /version) and sets the cluster version through raft to the lowest of them
// (major.minor.0). While the versions are not all known at the first
// decision, the cluster starts at 3.0.0 and moves up once they are. While
// a downgrade is enabled, the leader lowers the cluster version to the
// downgrade target, and cancels the downgrade by itself once every member
// runs the target version. Every member's storage version follows the
// cluster version when the version change is applied.

// monitorVersionInterval is how often the leader reconsiders the cluster
// version (etcd: the peer connection write timeout less one second).
const monitorVersionInterval = 4 * time.Second

// minClusterVersion is the cluster version set while the members' server
// versions are not all known.
const minClusterVersion = "3.0.0"

// versionUnknown is what /version reports for a version not decided yet.
const versionUnknown = "not_decided"

// peerVersionTimeout bounds one request for a peer's /version.
const peerVersionTimeout = time.Second

// semver is a version's major.minor; patch and suffixes never matter for
// cluster and storage versions.
type semver struct{ major, minor int }

func parseSemver(v string) (semver, bool) {
	major, minor, ok := majorMinor(v)
	return semver{major, minor}, ok
}

func (v semver) String() string { return fmt.Sprintf("%d.%d.0", v.major, v.minor) }

func (v semver) less(o semver) bool {
	return v.major < o.major || (v.major == o.major && v.minor < o.minor)
}

// oneMinorBelow reports whether to is exactly the version a cluster at
// from may be downgraded to.
func oneMinorBelow(from, to semver) bool { return to.major == from.major && to.minor == from.minor-1 }

// versionState is what the leader decides from.
type versionState struct {
	cluster   string            // stored cluster version, "" if none
	downgrade downgradeInfo     // stored downgrade state
	servers   map[uint64]string // every member's server version, "" if unknown
}

// minimalServer is the lowest server version of all members, or false when
// one of them is unknown or unparsable.
func (st versionState) minimalServer() (semver, bool) {
	var lowest semver
	found := false
	for _, v := range st.servers {
		sv, ok := parseSemver(v)
		if !ok {
			return semver{}, false
		}
		if !found || sv.less(lowest) {
			lowest, found = sv, true
		}
	}
	return lowest, found
}

// decideClusterVersion returns the cluster version to set, "" to leave it.
func decideClusterVersion(st versionState) (string, error) {
	minimal, known := st.minimalServer()
	current, hasCurrent := parseSemver(st.cluster)
	if !hasCurrent {
		if known {
			return minimal.String(), nil
		}
		return minClusterVersion, nil
	}
	if !known {
		return "", nil
	}
	if st.downgrade.Enabled {
		target, ok := parseSemver(st.downgrade.TargetVersion)
		switch {
		case !ok:
			return "", fmt.Errorf("invalid downgrade target %q", st.downgrade.TargetVersion)
		case target == current:
			return "", nil
		case !oneMinorBelow(current, target) || !oneMinorBelow(minimal, target):
			return "", fmt.Errorf("invalid downgrade target")
		}
		return target.String(), nil
	}
	if current.less(minimal) && current.major == minimal.major {
		return minimal.String(), nil
	}
	return "", nil
}

// downgradeFinished reports whether every member runs the downgrade target.
func downgradeFinished(st versionState) bool {
	target, ok := parseSemver(st.downgrade.TargetVersion)
	if !st.downgrade.Enabled || !ok {
		return false
	}
	for _, v := range st.servers {
		if sv, ok := parseSemver(v); !ok || sv != target {
			return false
		}
	}
	return true
}

// versionKeeper runs the version state of the cluster on one member: the
// leader's monitors that set the cluster version and end a finished
// downgrade, Maintenance.Downgrade, and the reads and apply-time writes of
// the cluster version, storage version and downgrade flag in the backend.
type versionKeeper struct {
	self   uint64
	member versionMember
	peers  *http.Client
	lg     *zap.Logger
	timing versionTiming
	stop   <-chan struct{}
}

// versionTiming is how often the monitors look, and how long a proposal of
// theirs may take.
type versionTiming struct {
	monitor, downgradeCheck, request time.Duration
}

// versionMember is what versionKeeper needs of the member.
type versionMember interface {
	// withStores runs read on the current backend while a snapshot
	// install cannot swap it; false when the member has stopped.
	withStores(read func(be backend.Backend)) bool
	// leads reports whether this member is the raft leader now.
	leads() bool
	// leaderChanged is closed at the next change of leader.
	leaderChanged() <-chan struct{}
	members() []*membership.Member
	propose(ctx context.Context, r *pb.InternalRaftRequest) (*apply.Result, error)
	linearizableReadNotify(ctx context.Context) error
	Header() *pb.ResponseHeader
}

// monitorVersions runs on every member and sets the cluster version while
// it leads: at every leader change and every monitor interval, from ready
// on.
func (k *versionKeeper) monitorVersions(ready <-chan struct{}) {
	select {
	case <-ready:
	case <-k.stop:
		return
	}
	for {
		changed := k.member.leaderChanged()
		if k.member.leads() {
			k.updateClusterVersion()
		}
		select {
		case <-changed:
		case <-time.After(k.timing.monitor):
		case <-k.stop:
			return
		}
	}
}

// updateClusterVersion is one round of the leader's version monitor.
func (k *versionKeeper) updateClusterVersion() {
	st := versionState{cluster: k.clusterVersion(), downgrade: k.downgrade(), servers: k.memberServerVersions()}
	next, err := decideClusterVersion(st)
	if err != nil {
		k.lg.Error("cannot decide cluster version", zap.String("cluster-version", st.cluster),
			zap.String("downgrade-target", st.downgrade.TargetVersion), zap.Error(err))
		return
	}
	if next != "" {
		k.proposeClusterVersion(st.cluster, next)
	}
}

// monitorDowngrade cancels an enabled downgrade once every member runs the
// target version, checking every --downgrade-check-time while it leads.
func (k *versionKeeper) monitorDowngrade() {
	if k.timing.downgradeCheck <= 0 {
		return
	}
	for {
		select {
		case <-time.After(k.timing.downgradeCheck):
		case <-k.stop:
			return
		}
		if !k.member.leads() {
			continue
		}
		d := k.downgrade()
		if !d.Enabled {
			continue
		}
		if downgradeFinished(versionState{downgrade: d, servers: k.memberServerVersions()}) {
			k.lg.Info("the cluster has been downgraded", zap.String("cluster-version", d.TargetVersion))
			k.proposeInternal(&pb.InternalRaftRequest{DowngradeInfoSet: &membershippb.DowngradeInfoSetRequest{Enabled: false}})
		}
	}
}

func (k *versionKeeper) proposeClusterVersion(current, next string) {
	if current == "" {
		k.lg.Info("setting up initial cluster version using v3 API", zap.String("cluster-version", shortVersion(next)))
	} else {
		k.lg.Info("updating cluster version using v3 API", zap.String("from", shortVersion(current)), zap.String("to", shortVersion(next)))
	}
	k.proposeInternal(&pb.InternalRaftRequest{ClusterVersionSet: &membershippb.ClusterVersionSetRequest{Ver: next}})
}

// proposeInternal proposes a request of the member's own, logging failure.
func (k *versionKeeper) proposeInternal(r *pb.InternalRaftRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), k.timing.request)
	defer cancel()
	if _, err := k.member.propose(ctx, r); err != nil {
		k.lg.Warn("failed to propose version change", zap.Error(err))
	}
}

// shortVersion is "X.Y" of "X.Y.Z", as etcd logs versions.
func shortVersion(v string) string {
	if sv, ok := parseSemver(v); ok {
		return strconv.Itoa(sv.major) + "." + strconv.Itoa(sv.minor)
	}
	return v
}

// memberServerVersions asks every member for its server version: the local
// one directly, the others over their peer URLs, in parallel. A member that
// does not answer maps to "".
func (k *versionKeeper) memberServerVersions() map[uint64]string {
	members := k.member.members()
	out := make(map[uint64]string, len(members))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range members {
		if m.ID == k.self {
			mu.Lock()
			out[m.ID] = serverVersion
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func(id uint64, urls []string) {
			defer wg.Done()
			v := k.peerServerVersion(urls)
			mu.Lock()
			out[id] = v
			mu.Unlock()
		}(m.ID, m.PeerURLs)
	}
	wg.Wait()
	return out
}

// peerServerVersion is the server version a member reports on the first of
// its peer URLs that answers, or "".
func (k *versionKeeper) peerServerVersion(urls []string) string {
	for _, u := range urls {
		ctx, cancel := context.WithTimeout(context.Background(), peerVersionTimeout)
		v, err := getPeerVersion(ctx, k.peers, u)
		cancel()
		if err == nil {
			return v
		}
	}
	return ""
}

func getPeerVersion(ctx context.Context, hc *http.Client, peerURL string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(peerURL, "/")+"/version", nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /version: %s", resp.Status)
	}
	var vs struct {
		Server string `json:"etcdserver"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&vs); err != nil {
		return "", err
	}
	return vs.Server, nil
}

// applyClusterVersion stores a cluster version (apply loop) and makes the
// storage version follow it, as etcd's storage version monitor does: the
// storage schema is the cluster version's major.minor; v3.5 had no storage
// version key. The 3.0.0 placeholder leaves the storage version alone. It
// reports a lowered cluster version, after which etcd forces a snapshot.
func (k *versionKeeper) applyClusterVersion(be backend.Backend, ver string) (lowered bool) {
	tx := be.BatchTx()
	tx.Lock()
	var prev string
	if _, vals := tx.UnsafeRange(backend.BucketCluster, keyClusterVersion, nil, 0); len(vals) > 0 {
		prev = string(vals[0])
	}
	tx.UnsafePut(backend.BucketCluster, keyClusterVersion, []byte(ver))
	if sv, ok := parseSemver(ver); ok && ver != minClusterVersion {
		if sv.major == 3 && sv.minor <= 5 {
			tx.UnsafeDelete(backend.BucketMeta, backend.MetaStorageVersion)
		} else {
			tx.UnsafePut(backend.BucketMeta, backend.MetaStorageVersion, []byte(sv.String()))
		}
	}
	tx.Unlock()
	k.lg.Info("set cluster version", zap.String("cluster-version", shortVersion(ver)))
	p, okPrev := parseSemver(prev)
	n, okNext := parseSemver(ver)
	if okPrev && okNext && n.less(p) {
		k.lg.Info("Cluster version downgrade detected, forcing snapshot", zap.String("prev-cluster-version", prev), zap.String("new-cluster-version", ver))
		return true
	}
	return false
}

// clusterVersion is the cluster version as "X.Y.0", or "" while undecided.
func (k *versionKeeper) clusterVersion() string {
	var v string
	k.member.withStores(func(be backend.Backend) { v = readBucketValue(be, backend.BucketCluster, keyClusterVersion) })
	return v
}

// storageVersion is the backend's storage version as "X.Y.0", or "" while
// it has none.
func (k *versionKeeper) storageVersion() string {
	var v string
	k.member.withStores(func(be backend.Backend) { v = storageVersionOf(be) })
	return v
}

// storageVersionOf reads the storage version of be, for callers that hold
// the stores already.
func storageVersionOf(be backend.Backend) string {
	return readBucketValue(be, backend.BucketMeta, backend.MetaStorageVersion)
}

// readBucketValue is the value of key in bucket, "" when it is not there.
func readBucketValue(be backend.Backend, bucket []byte, key []byte) string {
	tx := be.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	_, vals := tx.UnsafeRange(bucket, key, nil, 0)
	if len(vals) == 0 {
		return ""
	}
	return string(vals[0])
}

// serveVersion answers /version on the peer URLs with the document the
// client URLs serve.
func (k *versionKeeper) serveVersion(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{
		"etcdserver":  serverVersion,
		"etcdcluster": orNotDecided(k.clusterVersion()),
		"storage":     orNotDecided(k.storageVersion()),
	})
}

func orNotDecided(v string) string {
	if v == "" {
		return versionUnknown
	}
	return v
}
