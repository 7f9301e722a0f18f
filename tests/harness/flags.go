package harness

import (
	"fmt"
	"strings"
)

// Flags are the command-line flags that place a member: its name, data dir,
// URLs and the cluster it bootstraps. Empty fields are left out, so that
// the server's defaults (or environment variables) decide them.
type Flags struct {
	Name    string
	DataDir string
	// ClientURL is both listened on and advertised.
	ClientURL string
	// PeerURL is listened on; AdvertisePeerURL is what the member tells
	// the others (PeerURL when empty; a proxy's address when traffic goes
	// through one).
	PeerURL, AdvertisePeerURL string
	// InitialCluster is --initial-cluster; when empty and Name is set, the
	// member bootstraps a cluster of itself: Name=AdvertisePeerURL.
	InitialCluster string
	Token          string // --initial-cluster-token
	State          string // --initial-cluster-state ("new" or "existing")
	// Extra flags come last, so they override any of the above.
	Extra []string
}

// Args renders the flags in the order the fields are declared.
func (f Flags) Args() []string {
	adv := f.AdvertisePeerURL
	if adv == "" {
		adv = f.PeerURL
	}
	ic := f.InitialCluster
	if ic == "" && f.Name != "" && adv != "" {
		ic = f.Name + "=" + adv
	}
	var args []string
	add := func(flag, v string) {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	add("--name", f.Name)
	add("--data-dir", f.DataDir)
	add("--listen-client-urls", f.ClientURL)
	add("--advertise-client-urls", f.ClientURL)
	add("--listen-peer-urls", f.PeerURL)
	add("--initial-advertise-peer-urls", adv)
	add("--initial-cluster", ic)
	add("--initial-cluster-token", f.Token)
	add("--initial-cluster-state", f.State)
	return append(args, f.Extra...)
}

// InitialCluster renders name=URL pairs as --initial-cluster wants them;
// names and urls are matched by index.
func InitialCluster(names, urls []string) string {
	if len(names) != len(urls) {
		panic(fmt.Sprintf("harness.InitialCluster: %d names, %d URLs", len(names), len(urls)))
	}
	parts := make([]string, len(names))
	for i := range names {
		parts[i] = names[i] + "=" + urls[i]
	}
	return strings.Join(parts, ",")
}

// Names returns "m0", "m1", ... for a cluster of n members.
func Names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("m%d", i)
	}
	return out
}
