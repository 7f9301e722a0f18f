package etcdserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"time"

	"go.etcd.io/raft/v3"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/membership"
)

// joinTimeout bounds asking one peer for the member list.
const joinTimeout = 5 * time.Second

// clusterJoiner bootstraps a member that joins a running cluster. It needs
// only the configuration: the member does not exist yet.
type clusterJoiner struct {
	cfg        *Config
	lg         *zap.Logger
	raftConfig func(id uint64, ms *raft.MemoryStorage) *raft.Config
}

// join starts a member with an empty data dir that was added
// to a running cluster (--initial-cluster-state=existing): it learns the
// cluster ID and its own member ID from a peer's /members, checks that the
// cluster is the one --initial-cluster describes, and starts raft without
// peers; the leader then sends it the log or a snapshot.
func (j clusterJoiner) join() (*bootstrapped, error) {
	remote, clusterID, err := j.fetchRemoteMembers()
	if err != nil {
		return nil, err
	}
	self, err := j.matchLocalMember(remote)
	if err != nil {
		return nil, err
	}
	b, err := freshMember(j.cfg, j.lg, self.ID, clusterID, j.raftConfig)
	if err != nil {
		return nil, err
	}
	j.lg.Info("joining existing cluster", zap.String("local-member-id", idHex(self.ID)), zap.String("cluster-id", idHex(clusterID)))
	b.peers = remote // and an empty log: the leader sends it
	return b, nil
}

// fetchRemoteMembers asks the other members of --initial-cluster for the
// member list, as etcd does; the first that answers wins.
func (j clusterJoiner) fetchRemoteMembers() ([]*membership.Member, uint64, error) {
	var errs []error
	for name, urls := range j.cfg.InitialCluster {
		if name == j.cfg.Name {
			continue
		}
		for _, u := range urls {
			members, cid, err := getMembers(j.cfg.peerHTTP, u)
			if err == nil {
				return members, cid, nil
			}
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
		}
	}
	return nil, 0, fmt.Errorf("cannot fetch cluster info from peer urls: %w", errors.Join(errs...))
}

func getMembers(hc *http.Client, peerURL string) ([]*membership.Member, uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), joinTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, peerURL+"/members", nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("unexpected status %s", resp.Status)
	}
	cid, err := strconv.ParseUint(resp.Header.Get("X-Etcd-Cluster-ID"), 16, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("bad cluster ID header: %w", err)
	}
	var members []*membership.Member
	if err := json.NewDecoder(resp.Body).Decode(&members); err != nil {
		return nil, 0, fmt.Errorf("bad member list: %w", err)
	}
	return members, cid, nil
}

// matchLocalMember checks --initial-cluster against the cluster's member
// list (same members, same peer URLs) and returns this member's entry.
func (j clusterJoiner) matchLocalMember(remote []*membership.Member) (*membership.Member, error) {
	if len(remote) != len(j.cfg.InitialCluster) {
		return nil, fmt.Errorf("error validating peerURLs: member count is unequal (--initial-cluster has %d members, the cluster %d)",
			len(j.cfg.InitialCluster), len(remote))
	}
	own := sortedCopy(j.cfg.PeerURLs)
	var self *membership.Member
	for _, m := range remote {
		urls := sortedCopy(m.PeerURLs)
		if !initialClusterHas(j.cfg.InitialCluster, urls) {
			return nil, fmt.Errorf("error validating peerURLs: unmatched member while checking PeerURLs (%v is not in --initial-cluster)", m.PeerURLs)
		}
		if slices.Equal(urls, own) {
			self = m
		}
	}
	if self == nil {
		return nil, fmt.Errorf("the cluster has no member with peer URLs %v; add it first (member add)", j.cfg.PeerURLs)
	}
	return self, nil
}

func initialClusterHas(cluster map[string][]string, urls []string) bool {
	for _, u := range cluster {
		if slices.Equal(sortedCopy(u), urls) {
			return true
		}
	}
	return false
}

func sortedCopy(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}
