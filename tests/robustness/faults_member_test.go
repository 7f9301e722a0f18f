package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cairnkv/cairn/pkg/proxy"
	"github.com/cairnkv/cairn/tests/harness"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Membership faults, as etcd's robustness suite has them: a member is
// replaced (stopped, removed, its data wiped, added back under a new ID
// and started into the existing cluster), and a fourth member joins as a
// learner, is promoted once it is in sync and is removed again. The
// traffic keeps running against the three original client URLs, so no
// client ever talks to a member that is not a voter.

const (
	// reconfigBound bounds the retries of one membership request: a
	// change may be refused until the voters have been connected for
	// etcd's health interval (5 s) after an earlier fault, and leader
	// changes fail requests whose outcome the retry then checks.
	reconfigBound = 30 * time.Second
	// reconfigTimeout is one membership request's deadline.
	reconfigTimeout = 3 * time.Second
	// catchUpBound is how long a new member may take to apply what the
	// leader had committed when it started, or a learner to become
	// promotable.
	catchUpBound = 30 * time.Second
	// learnerName names the fourth member.
	learnerName = "m3"
)

// memberReplaceFault stops member i, removes it through another member
// and, as the undo, wipes its data dir and adds it back under a new ID
// (on the same peer URL, or on a new proxy in front of the same port),
// started with --initial-cluster-state existing, and waits until it has
// applied everything the leader had committed.
func memberReplaceFault(c *cluster, i int, rng *rand.Rand, ev *faultEvent) func() error {
	via := c.other(i)
	if via < 0 {
		return func() error { return fmt.Errorf("no member to reconfigure m%d through", i) }
	}
	c.procs[i].kill()
	old := c.ids[i]
	if err := c.removeMember(via, old, ev); err != nil {
		return func() error { return err }
	}
	newURL := rng.IntN(2) == 0
	return func() error { return c.rejoin(i, via, old, newURL, ev) }
}

// rejoin adds member i, whose process is down and removed from the
// cluster, back as a new member with an empty data dir.
func (c *cluster) rejoin(i, via int, old uint64, newURL bool, ev *faultEvent) error {
	p := c.procs[i]
	if err := os.RemoveAll(argValue(p.args, "--data-dir")); err != nil {
		return err
	}
	if newURL {
		if err := c.replaceProxy(i); err != nil {
			return err
		}
	}
	peerURL := "http://" + c.proxies[i].Addr()
	id, members, err := c.addMember(via, peerURL, false, ev)
	if err != nil {
		return err
	}
	c.awaitAddApplied(id, i, ev)
	c.setID(i, id)
	p.args = setArg(p.args, "--initial-advertise-peer-urls", peerURL)
	p.args = setArg(p.args, "--initial-cluster", initialCluster(members, id, p.name))
	p.args = setArg(p.args, "--initial-cluster-state", "existing")
	start := time.Now()
	if err := p.start(); err != nil {
		return err
	}
	index, err := c.waitCaughtUp(i, catchUpBound)
	which := "same"
	if newURL {
		which = "new"
	}
	note(ev, "ID %x replaced by %x on the %s peer URL through m%d", old, id, which, via)
	if err != nil {
		return err
	}
	note(ev, "applied the leader's index %d %v after its start", index, time.Since(start).Round(time.Millisecond))
	return nil
}

// replaceProxy gives member i a new proxy (a new peer URL) in front of
// the same peer port, with the same sender filter; the old one is closed.
func (c *cluster) replaceProxy(i int) error {
	np, err := proxy.New(proxy.Config{Listen: "127.0.0.1:0", Target: c.listen[i]})
	if err != nil {
		return err
	}
	old := c.proxies[i]
	c.proxies[i] = np
	c.cut.SetProxy(i, np)
	old.Close()
	return nil
}

// waitCaughtUp waits until member i has applied the index the leader had
// committed when the wait began, and returns that index.
func (c *cluster) waitCaughtUp(i int, d time.Duration) (uint64, error) {
	deadline := time.Now().Add(d)
	var target uint64
	for target == 0 {
		if l := c.leader(); l >= 0 && l != i {
			target, _ = c.raftIndex(l)
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("m%d: no leader to catch up with within %v", i, d)
		}
		if target == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := c.admin[i].Status(ctx, c.endpoints[i])
		cancel()
		if err == nil && st.RaftAppliedIndex >= target {
			return target, nil
		}
		if time.Now().After(deadline) {
			return target, fmt.Errorf("m%d did not apply the leader's index %d within %v (status %v, error %v)", i, target, d, st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// learnerFault adds a fourth member as a learner through member i, starts
// it and promotes it as soon as the leader finds it in sync; the undo
// removes it and stops it, so that the cluster has its three members
// again.
func learnerFault(c *cluster, i int, _ *rand.Rand, ev *faultEvent) func() error {
	m, err := c.startLearner(i, ev)
	if err != nil {
		return func() error { return err }
	}
	note(ev, "learner %s (%x) added through m%d", learnerName, m.id, i)
	start := time.Now()
	err = c.reconfigure(i, fmt.Sprintf("promote %x", m.id), func(ctx context.Context, cli *clientv3.Client) error {
		_, err := cli.MemberPromote(ctx, m.id)
		return err
	}, func(ms []*pb.Member) bool {
		x := findMember(ms, m.id)
		return x != nil && !x.IsLearner
	}, catchUpBound, ev)
	if err != nil {
		return func() error { return joinErr(err, c.dropMember(i, m, ev)) }
	}
	note(ev, "promoted %v after its start", time.Since(start).Round(time.Millisecond))
	return func() error { return c.dropMember(i, m, ev) }
}

func joinErr(err, cleanup error) error {
	if cleanup != nil {
		return fmt.Errorf("%w; then removing the learner: %v", err, cleanup)
	}
	return err
}

// tempMember is the fourth member of learnerFault.
type tempMember struct {
	id   uint64
	proc *proc
}

// startLearner adds a learner with fresh ports and an empty data dir
// through member via and starts it. Its flags are m0's with its own name,
// URLs and the cluster it joins.
func (c *cluster) startLearner(via int, ev *faultEvent) (*tempMember, error) {
	peerURL := harness.FreeURL(c.t)
	clientURL := harness.FreeURL(c.t)
	dataDir := filepath.Join(c.dir, learnerName+".etcd")
	if err := os.RemoveAll(dataDir); err != nil {
		return nil, err
	}
	id, members, err := c.addMember(via, peerURL, true, ev)
	if err != nil {
		return nil, err
	}
	c.awaitAddApplied(id, -1, ev)
	args := slices.Clone(c.procs[0].args)
	for flag, v := range map[string]string{
		"--name":                        learnerName,
		"--data-dir":                    dataDir,
		"--listen-client-urls":          clientURL,
		"--advertise-client-urls":       clientURL,
		"--listen-peer-urls":            peerURL,
		"--initial-advertise-peer-urls": peerURL,
		"--initial-cluster":             initialCluster(members, id, learnerName),
		"--initial-cluster-state":       "existing",
	} {
		args = setArg(args, flag, v)
	}
	m := &tempMember{id: id, proc: &proc{name: learnerName, bin: c.procs[0].bin, args: args, logPath: filepath.Join(c.dir, learnerName+".log")}}
	if err := m.proc.start(); err != nil {
		return nil, joinErr(err, c.dropMember(via, m, ev))
	}
	return m, nil
}

// awaitAddApplied waits (up to reconfigBound) until every member but
// except (-1 for none: the one being replaced is down) lists member id in
// its own, serializable, member list. A joining member asks
// one of the others for the cluster and refuses to start if that one has
// not applied the add yet ("member count is unequal"), as etcd does; a
// member just back from a kill or power cut can lag the one that answered
// the add by seconds on a loaded machine.
func (c *cluster) awaitAddApplied(id uint64, except int, ev *faultEvent) {
	deadline := time.Now().Add(reconfigBound)
	for j := range c.admin {
		for j != except {
			ctx, cancel := context.WithTimeout(context.Background(), reconfigTimeout)
			ml, err := c.admin[j].MemberList(ctx, clientv3.WithSerializable())
			cancel()
			if err == nil && findMember(ml.Members, id) != nil {
				break
			}
			if time.Now().After(deadline) {
				note(ev, "m%d does not list %x yet; starting it anyway", j, id)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// dropMember removes m through member via and stops it (a removed member
// normally stops by itself).
func (c *cluster) dropMember(via int, m *tempMember, ev *faultEvent) error {
	err := c.removeMember(via, m.id, ev)
	m.proc.stop()
	return err
}

// removeMember removes member id through member via.
func (c *cluster) removeMember(via int, id uint64, ev *faultEvent) error {
	return c.reconfigure(via, fmt.Sprintf("remove %x", id), func(ctx context.Context, cli *clientv3.Client) error {
		_, err := cli.MemberRemove(ctx, id)
		return err
	}, func(ms []*pb.Member) bool { return findMember(ms, id) == nil }, reconfigBound, ev)
}

// addMember adds a member (a learner if learner) with peerURL through
// member via and returns its ID and the members after the add.
func (c *cluster) addMember(via int, peerURL string, learner bool, ev *faultEvent) (uint64, []*pb.Member, error) {
	var members []*pb.Member
	err := c.reconfigure(via, "add "+peerURL, func(ctx context.Context, cli *clientv3.Client) error {
		add := cli.MemberAdd
		if learner {
			add = cli.MemberAddAsLearner
		}
		resp, err := add(ctx, []string{peerURL})
		if err == nil {
			members = resp.Members
		}
		return err
	}, func(ms []*pb.Member) bool {
		// An attempt whose answer was lost may have added it.
		if memberWithURL(ms, peerURL) != nil {
			members = ms
			return true
		}
		return false
	}, reconfigBound, ev)
	if err != nil {
		return 0, nil, err
	}
	m := memberWithURL(members, peerURL)
	if m == nil {
		return 0, nil, fmt.Errorf("%s is not in the member list after its add: %v", peerURL, members)
	}
	return m.ID, members, nil
}

// reconfigure sends a membership request through member via until it
// succeeds, or applied finds in the member list that an earlier attempt
// whose outcome was unknown took effect, or bound has passed. The
// refusals it retried go to ev's detail.
func (c *cluster) reconfigure(via int, what string, send func(context.Context, *clientv3.Client) error, applied func([]*pb.Member) bool, bound time.Duration, ev *faultEvent) error {
	deadline := time.Now().Add(bound)
	start := time.Now()
	var errs []string
	defer func() {
		if len(errs) > 0 {
			note(ev, "%s: %d attempt(s) failed in %v (%s)", what, len(errs), time.Since(start).Round(time.Millisecond), countDistinct(errs))
		}
	}()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), reconfigTimeout)
		err := send(ctx, c.admin[via])
		cancel()
		if err == nil {
			return nil
		}
		errs = append(errs, shortErr(err))
		ctx, cancel = context.WithTimeout(context.Background(), reconfigTimeout)
		ml, lerr := c.admin[via].MemberList(ctx)
		cancel()
		if lerr == nil && applied(ml.Members) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s through m%d: still failing after %v: %w", what, via, bound, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// note adds to ev's detail.
func note(ev *faultEvent, format string, args ...any) {
	if ev.detail != "" {
		ev.detail += "; "
	}
	ev.detail += fmt.Sprintf(format, args...)
}

// countDistinct lists the distinct strings of s, in order of first
// appearance, with their counts.
func countDistinct(s []string) string {
	counts := map[string]int{}
	var order []string
	for _, x := range s {
		if counts[x] == 0 {
			order = append(order, x)
		}
		counts[x]++
	}
	parts := make([]string, len(order))
	for i, x := range order {
		parts[i] = fmt.Sprintf("%dx %q", counts[x], x)
	}
	return strings.Join(parts, ", ")
}

func findMember(ms []*pb.Member, id uint64) *pb.Member {
	for _, m := range ms {
		if m.ID == id {
			return m
		}
	}
	return nil
}

func memberWithURL(ms []*pb.Member, url string) *pb.Member {
	for _, m := range ms {
		if slices.Contains(m.PeerURLs, url) {
			return m
		}
	}
	return nil
}

// initialCluster is the --initial-cluster of member id, which has no name
// in ms yet because it has not started.
func initialCluster(ms []*pb.Member, id uint64, name string) string {
	var parts []string
	for _, m := range ms {
		n := m.Name
		if m.ID == id {
			n = name
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, n+"="+u)
		}
	}
	return strings.Join(parts, ",")
}

// argValue returns the value following flag in args, or "".
func argValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// setArg sets flag's value in args (given as "--flag", "value"), adding
// the flag if args lack it.
func setArg(args []string, flag, value string) []string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		args[i+1] = value
		return args
	}
	return append(args, flag, value)
}

func isMembershipFault(name string) bool {
	for _, f := range faults {
		if f.name == name {
			return f.membership
		}
	}
	return false
}

// availability counts the writes (put, delete, txn, revoke) issued during
// ev that were acknowledged and that failed, and the longest stretch of
// ev without an acknowledged write, up to trafficEnd (test clock) at most.
func availability(recs []record, ev faultEvent, trafficEnd int64) string {
	end := min(ev.end, trafficEnd)
	var ok, failed int
	var acks []int64
	for _, r := range recs {
		switch r.in.kind {
		case opPut, opDelete, opTxn, opLeaseRevoke:
		default:
			continue
		}
		if r.call < ev.start || r.call > end {
			continue
		}
		if r.out.unknown {
			failed++
			continue
		}
		ok++
		acks = append(acks, min(r.ret, end))
	}
	slices.Sort(acks)
	var gap int64
	last := ev.start
	for _, a := range append(acks, end) {
		gap = max(gap, a-last)
		last = a
	}
	total := max(ok+failed, 1)
	return fmt.Sprintf("%d acknowledged, %d failed (%.1f%%), longest stretch without an acknowledged write %v",
		ok, failed, 100*float64(failed)/float64(total), time.Duration(gap).Round(time.Millisecond))
}
