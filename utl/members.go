package utl

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cairnkv/cairn/server/config"
	"github.com/cairnkv/cairn/server/membership"
)

// cluster is the membership a restore bootstraps: the --initial-cluster
// members with IDs derived from their peer URLs and the cluster token,
// exactly as a fresh etcd member derives them.
type cluster struct {
	id      uint64
	members []*membership.Member // ascending ID
}

// memberByName returns the member called name, or nil.
func (c *cluster) memberByName(name string) *membership.Member {
	for _, m := range c.members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

func (c *cluster) ids() []uint64 {
	ids := make([]uint64, len(c.members))
	for i, m := range c.members {
		ids[i] = m.ID
	}
	return ids
}

// newCluster builds the cluster of initial (name => sorted peer URLs).
func newCluster(initial map[string][]string, token string) (*cluster, error) {
	c := &cluster{}
	seen := make(map[uint64]bool)
	for _, name := range sortedNames(initial) {
		urls := initial[name]
		m := &membership.Member{ID: membership.ComputeMemberID(urls, token, nil), PeerURLs: urls, Name: name}
		if seen[m.ID] {
			return nil, fmt.Errorf("member exists with identical ID %x", m.ID)
		}
		if m.ID == 0 {
			return nil, errors.New("cannot use 0 as member id")
		}
		seen[m.ID] = true
		c.members = append(c.members, m)
	}
	sort.Slice(c.members, func(i, j int) bool { return c.members[i].ID < c.members[j].ID })
	c.id = membership.ComputeClusterID(c.ids())
	return c, nil
}

func sortedNames(m map[string][]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// parseInitialCluster parses "name=url,name=url" as etcd's types.NewURLsMap
// (config.SplitNamedURLs), each member's URLs checked as peer URLs.
func parseInitialCluster(s string) (map[string][]string, error) {
	raw := config.SplitNamedURLs(s)
	out := make(map[string][]string, len(raw))
	for _, name := range sortedNames(raw) {
		us, err := membership.ParsePeerURLs(raw[name])
		if err != nil {
			return nil, err
		}
		out[name] = us
	}
	return out, nil
}

// clusterString renders the map as etcd does in messages: sorted name=url.
func clusterString(m map[string][]string) string {
	var pairs []string
	for name, us := range m {
		for _, u := range us {
			pairs = append(pairs, name+"="+u)
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// verifyBootstrap makes etcd's checks of a new member's configuration: name
// is in the initial cluster, its advertised peer URLs are those the cluster
// lists for it, and no URL is listed twice. URLs are compared as strings;
// etcd also resolves host names before giving up.
func verifyBootstrap(name string, peerURLs []string, initial map[string][]string) error {
	own, ok := initial[name]
	if !ok {
		return fmt.Errorf("couldn't find local name %q in the initial cluster configuration", name)
	}
	if err := advertiseMatches(name, peerURLs, own); err != nil {
		return err
	}
	if hasDuplicateURL(initial) {
		return fmt.Errorf("initial cluster %s has duplicate url", clusterString(initial))
	}
	if clusterString(initial) == "" {
		return errors.New("initial cluster unset and no discovery endpoints found")
	}
	return nil
}

func advertiseMatches(name string, advertised, listed []string) error {
	if strings.Join(advertised, ",") == strings.Join(listed, ",") {
		return nil
	}
	var mismatch error
	if len(advertised) != len(listed) {
		mismatch = fmt.Errorf("len(%q) != len(%q)", advertised, listed)
	} else {
		i := 0
		for advertised[i] == listed[i] {
			i++
		}
		mismatch = fmt.Errorf("resolved urls: %q != %q", advertised[i], listed[i])
	}
	apStr := strings.Join(advertised, ",")
	if missing := difference(listed, advertised); len(missing) > 0 {
		for i := range missing {
			missing[i] = name + "=" + missing[i]
		}
		return fmt.Errorf("--initial-cluster has %s but missing from --initial-advertise-peer-urls=%s (%w)",
			strings.Join(missing, ","), apStr, mismatch)
	}
	self := clusterString(map[string][]string{name: advertised})
	if missing := difference(advertised, listed); len(missing) > 0 {
		return fmt.Errorf("--initial-advertise-peer-urls has %s but missing from --initial-cluster=%s",
			strings.Join(missing, ","), self)
	}
	return fmt.Errorf("failed to resolve %s to match --initial-cluster=%s (%w)", apStr, self, mismatch)
}

// difference returns the elements of a not in b.
func difference(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, s := range b {
		in[s] = true
	}
	var out []string
	for _, s := range a {
		if !in[s] {
			out = append(out, s)
		}
	}
	return out
}

func hasDuplicateURL(m map[string][]string) bool {
	seen := make(map[string]bool)
	for _, us := range m {
		for _, u := range us {
			if seen[u] {
				return true
			}
			seen[u] = true
		}
	}
	return false
}
