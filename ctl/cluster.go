package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cairnkv/cairn/client"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

func init() {
	register(
		&command{path: "lease grant", usage: "Creates leases", run: leaseGrantCmd},
		&command{path: "lease revoke", usage: "Revokes leases", run: leaseRevokeCmd},
		&command{path: "lease timetolive", usage: "Get lease information", flags: func(fs *flag.FlagSet, o *opts) {
			fs.BoolVar(&o.keys, "keys", false, "Get keys attached to this lease")
		}, run: leaseTTLCmd},
		&command{path: "lease list", usage: "List all active leases", run: leaseListCmd},
		&command{path: "lease keep-alive", usage: "Keeps leases alive (renew)", flags: func(fs *flag.FlagSet, o *opts) {
			fs.BoolVar(&o.once, "once", false, "Resets the keep-alive time to its original value and exits immediately")
		}, run: leaseKeepAliveCmd},
		&command{path: "member list", usage: "Lists all members in the cluster", flags: func(fs *flag.FlagSet, o *opts) {
			fs.StringVar(&o.consistency, "consistency", "l", "Linearizable(l) or Serializable(s)")
		}, run: memberListCmd},
		&command{path: "member add", usage: "Adds a member into the cluster", flags: func(fs *flag.FlagSet, o *opts) {
			fs.StringVar(&o.peerURLs, "peer-urls", "", "comma separated peer URLs for the new member.")
			fs.BoolVar(&o.learner, "learner", false, "indicates if the new member is raft learner")
		}, run: memberAddCmd},
		&command{path: "member remove", usage: "Removes a member from the cluster", run: memberRemove},
		&command{path: "member update", usage: "Updates a member in the cluster", flags: func(fs *flag.FlagSet, o *opts) {
			fs.StringVar(&o.peerURLs, "peer-urls", "", "comma separated peer URLs for the updated member.")
		}, run: memberUpdateCmd},
		&command{path: "member promote", usage: "Promotes a non-voting member in the cluster", run: memberPromote},
		&command{path: "alarm list", usage: "Lists all alarms",
			run: listing("alarm list command accepts no arguments", (*client.Client).AlarmList, (*printer).alarm)},
		&command{path: "alarm disarm", usage: "Disarms all alarms", run: alarmDisarmCmd},
		&command{path: "move-leader", usage: "Transfers leadership to another etcd cluster member.", run: moveLeaderCmd},
	)
}

// withClient runs f with a connected client and a command-timeout context.
func (c *cmdCtx) withClient(f func(ctx context.Context, cl *client.Client) error) error {
	cl, err := c.newClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := c.ctx()
	defer cancel()
	return f(ctx, cl)
}

// leaseArg reads the command's one argument, a lease ID in hex; usage is
// etcdctl's message for a wrong argument count.
func (c *cmdCtx) leaseArg(usage string) (client.LeaseID, error) {
	id, err := c.intArg(usage, 16, exitBadArgs, "bad lease ID arg (%w), expecting ID in Hex")
	return client.LeaseID(id), err
}

// failOn is fail for err, or nil when there is no error.
func failOn(err error, code int, format string) error {
	if err == nil {
		return nil
	}
	return fail(code, format, err)
}

func leaseGrantCmd(c *cmdCtx) error {
	ttl, err := c.intArg("lease grant command needs TTL argument", 10, exitBadArgs, "bad TTL (%w)")
	if err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (*client.LeaseGrantResponse, error) {
		r, err := cl.Grant(ctx, ttl)
		return r, failOn(err, exitError, "failed to grant lease (%w)")
	}, c.p.grant)
}

func leaseRevokeCmd(c *cmdCtx) error {
	id, err := c.leaseArg("lease revoke command needs 1 argument")
	if err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (*client.LeaseRevokeResponse, error) {
		r, err := cl.Revoke(ctx, id)
		return r, failOn(err, exitError, "failed to revoke lease (%w)")
	}, func(r *client.LeaseRevokeResponse) error { return c.p.revoke(id, r) })
}

func leaseTTLCmd(c *cmdCtx) error {
	id, err := c.leaseArg("lease timetolive command needs lease ID as argument")
	if err != nil {
		return err
	}
	var lo []client.LeaseOption
	if c.o.keys {
		lo = append(lo, client.WithAttachedKeys())
	}
	return request(c, func(ctx context.Context, cl *client.Client) (*client.LeaseTimeToLiveResponse, error) {
		r, err := cl.TimeToLive(ctx, id, lo...)
		return r, failOn(err, exitBadConn, "%v")
	}, func(r *client.LeaseTimeToLiveResponse) error { return c.p.timeToLive(r, c.o.keys) })
}

func leaseListCmd(c *cmdCtx) error {
	return request(c, func(ctx context.Context, cl *client.Client) (*client.LeaseLeasesResponse, error) {
		r, err := cl.Leases(ctx)
		return r, failOn(err, exitBadConn, "%v")
	}, c.p.leases)
}

func leaseKeepAliveCmd(c *cmdCtx) error {
	id, err := c.leaseArg("lease keep-alive command needs lease ID as argument")
	if err != nil {
		return err
	}
	cl, err := c.newClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	if c.o.once {
		ctx, cancel := c.ctx()
		defer cancel()
		r, err := cl.KeepAliveOnce(ctx, id)
		if err != nil {
			return fail(exitBadConn, "%v", err)
		}
		return c.p.keepAlive(r)
	}
	ch, err := cl.KeepAlive(context.Background(), id)
	if err != nil {
		return fail(exitBadConn, "%v", err)
	}
	for r := range ch {
		if err := c.p.keepAlive(r); err != nil {
			return err
		}
	}
	if c.p.format == "simple" {
		fmt.Fprintf(c.stdout, "lease %016x expired or revoked.\n", int64(id))
	}
	return nil
}

func memberListCmd(c *cmdCtx) error {
	var ops []client.OpOption
	if isSerializable(c.o.consistency) {
		ops = append(ops, client.WithSerializable())
	}
	return request(c, func(ctx context.Context, cl *client.Client) (*client.MemberListResponse, error) {
		return cl.MemberList(ctx, ops...)
	}, c.p.memberList)
}

func memberAddCmd(c *cmdCtx) error {
	if len(c.args) < 1 {
		return fail(exitBadArgs, "member name not provided")
	}
	if len(c.args) > 1 {
		ev := "too many arguments"
		for _, s := range c.args {
			if strings.HasPrefix(strings.ToLower(s), "http") {
				ev += ", did you mean --peer-urls=" + s
			}
		}
		return fail(exitBadArgs, "%s", ev)
	}
	name := c.args[0]
	if c.o.peerURLs == "" {
		return fail(exitBadArgs, "member peer urls not provided")
	}
	urls := strings.Split(c.o.peerURLs, ",")
	return c.withClient(func(ctx context.Context, cl *client.Client) error {
		var r *pb.MemberAddResponse
		var err error
		if c.o.learner {
			r, err = cl.MemberAddAsLearner(ctx, urls)
		} else {
			r, err = cl.MemberAdd(ctx, urls)
		}
		if err != nil {
			return err
		}
		as := " "
		if r.GetMember().GetIsLearner() {
			as = " as learner "
		}
		line := fmt.Sprintf("Member %16x added%sto cluster %16x", r.GetMember().GetID(), as, r.GetHeader().GetClusterId())
		if err := c.p.memberChange(r, r.GetHeader(), r.GetMembers(), line); err != nil {
			return err
		}
		if c.p.format == "simple" {
			var conf []string
			for _, m := range r.Members {
				for _, u := range m.PeerURLs {
					n := m.Name
					if m.ID == r.Member.ID {
						n = name
					}
					conf = append(conf, n+"="+u)
				}
			}
			fmt.Fprint(c.stdout, "\n")
			fmt.Fprintf(c.stdout, "ETCD_NAME=%q\n", name)
			fmt.Fprintf(c.stdout, "ETCD_INITIAL_CLUSTER=%q\n", strings.Join(conf, ","))
			fmt.Fprintf(c.stdout, "ETCD_INITIAL_ADVERTISE_PEER_URLS=%q\n", c.o.peerURLs)
			fmt.Fprint(c.stdout, "ETCD_INITIAL_CLUSTER_STATE=\"existing\"\n")
		}
		return nil
	})
}

func memberID(args []string) (uint64, error) {
	if len(args) != 1 {
		return 0, fail(exitBadArgs, "member ID is not provided")
	}
	id, err := strconv.ParseUint(args[0], 16, 64)
	if err != nil {
		return 0, fail(exitBadArgs, "bad member ID arg (%w), expecting ID in Hex", err)
	}
	return id, nil
}

var (
	memberRemove = memberChange(func(_ *cmdCtx, ctx context.Context, cl *client.Client, id uint64) (*client.MemberRemoveResponse, error) {
		return cl.MemberRemove(ctx, id)
	}, "removed from")
	memberUpdate = memberChange(func(c *cmdCtx, ctx context.Context, cl *client.Client, id uint64) (*client.MemberUpdateResponse, error) {
		return cl.MemberUpdate(ctx, id, strings.Split(c.o.peerURLs, ","))
	}, "updated in")
	memberPromote = memberChange(func(_ *cmdCtx, ctx context.Context, cl *client.Client, id uint64) (*client.MemberPromoteResponse, error) {
		return cl.MemberPromote(ctx, id)
	}, "promoted in")
)

// memberUpdateCmd refuses a missing --peer-urls before it connects, but
// after a bad member ID, as etcdctl does.
func memberUpdateCmd(c *cmdCtx) error {
	if _, err := memberID(c.args); err == nil && c.o.peerURLs == "" {
		return fail(exitBadArgs, "member peer urls not provided")
	}
	return memberUpdate(c)
}

func alarmDisarmCmd(c *cmdCtx) error {
	if err := c.wantArgs(0, "alarm disarm command accepts no arguments"); err != nil {
		return err
	}
	return c.withClient(func(ctx context.Context, cl *client.Client) error {
		// Disarm every alarm raised, as etcdctl does.
		list, err := cl.AlarmList(ctx)
		if err != nil {
			return err
		}
		out := &pb.AlarmResponse{Header: list.GetHeader()}
		for _, a := range list.GetAlarms() {
			r, err := cl.AlarmDisarm(ctx, a)
			if err != nil {
				return err
			}
			out.Header = r.GetHeader()
			out.Alarms = append(out.Alarms, r.GetAlarms()...)
		}
		return c.p.alarm(out)
	})
}

func moveLeaderCmd(c *cmdCtx) error {
	if len(c.args) != 1 {
		return fail(exitBadArgs, "move-leader command needs 1 argument")
	}
	target, err := strconv.ParseUint(c.args[0], 16, 64)
	if err != nil {
		return fail(exitBadArgs, "%v", err)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	eps := strings.Split(c.g.endpoints, ",")
	for _, ep := range eps {
		g := *c.g
		g.endpoints = ep
		sub := *c
		sub.g = &g
		cl, err := sub.newClient()
		if err != nil {
			return err
		}
		st, err := cl.Status(ctx, ep)
		if err != nil {
			cl.Close()
			return err
		}
		if st.GetHeader().GetMemberId() != st.GetLeader() {
			cl.Close()
			continue
		}
		r, err := cl.MoveLeader(ctx, target)
		cl.Close()
		if err != nil {
			return err
		}
		switch c.p.format {
		case "simple":
			fmt.Fprintf(c.stdout, "Leadership transferred from %x to %x\n", st.GetLeader(), target)
			return nil
		case "json":
			return c.p.json(r)
		case "protobuf":
			return c.p.pb(r)
		}
		return c.p.unsupported()
	}
	return fail(exitBadArgs, "no leader endpoint given at %v", eps)
}

// --- endpoint, defrag, snapshot ---

func init() {
	clusterFlag := func(fs *flag.FlagSet, o *opts) {
		fs.BoolVar(&o.cluster, "cluster", false, "use all endpoints from the cluster member list")
	}
	register(
		&command{path: "endpoint health", usage: "Checks the healthiness of endpoints specified in `--endpoints` flag", flags: clusterFlag, run: epHealthCmd},
		&command{path: "endpoint status", usage: "Prints out the status of endpoints specified in `--endpoints` flag", flags: clusterFlag, run: epStatusCmd},
		&command{path: "endpoint hashkv", usage: "Prints the KV history hash for each endpoint in --endpoints", flags: func(fs *flag.FlagSet, o *opts) {
			clusterFlag(fs, o)
			fs.Int64Var(&o.rev, "rev", 0, "maximum revision to hash (default: latest revision)")
		}, run: epHashKVCmd},
		&command{path: "defrag", usage: "Defragments the storage of the etcd members with given endpoints", flags: clusterFlag, run: defragCmd},
		&command{path: "snapshot save", usage: "Stores an etcd node backend snapshot to a given file", run: snapshotSaveCmd},
	)
}

// endpoints are --endpoints, or with --cluster every member's client URLs.
func (c *cmdCtx) endpointList() ([]string, error) {
	if !c.o.cluster {
		return strings.Split(c.g.endpoints, ","), nil
	}
	var eps []string
	err := c.withClient(func(ctx context.Context, cl *client.Client) error {
		r, err := cl.MemberList(ctx)
		if err != nil {
			return fail(exitError, "failed to fetch endpoints from etcd cluster member list: %w", err)
		}
		for _, m := range r.Members {
			eps = append(eps, m.ClientURLs...)
		}
		return nil
	})
	return eps, err
}

// perEndpoint runs f with a client for each endpoint in turn.
func (c *cmdCtx) perEndpoint(eps []string, f func(ep string, cl *client.Client, err error)) {
	for _, ep := range eps {
		g := *c.g
		g.endpoints = ep
		sub := *c
		sub.g = &g
		cl, err := sub.newClient()
		f(ep, cl, err)
		if cl != nil {
			cl.Close()
		}
	}
}

func epHealthCmd(c *cmdCtx) error {
	eps, err := c.endpointList()
	if err != nil {
		return err
	}
	var hs []epHealth
	bad := false
	c.perEndpoint(eps, func(ep string, cl *client.Client, err error) {
		if err != nil {
			hs = append(hs, epHealth{Ep: ep, Error: err.Error()})
			bad = true
			return
		}
		ctx, cancel := c.ctx()
		defer cancel()
		st := time.Now()
		_, err = cl.Get(ctx, "health")
		h := epHealth{Ep: ep, Took: time.Since(st).String()}
		if err == nil || errors.Is(err, rpctypes.ErrPermissionDenied) {
			h.Health = true
			ar, err := cl.AlarmList(ctx)
			if err == nil && len(ar.Alarms) > 0 {
				h.Health = false
				h.Error = "Active Alarm(s): "
				for _, a := range ar.Alarms {
					switch a.Alarm {
					case pb.AlarmType_NOSPACE:
						h.Error += "NOSPACE "
					case pb.AlarmType_CORRUPT:
						h.Error += "CORRUPT "
					default:
						h.Error += "UNKNOWN "
					}
				}
			} else if err != nil {
				h.Health = false
				h.Error = "Unable to fetch the alarm list"
			}
		} else {
			h.Error = err.Error()
		}
		if h.Error != "" {
			bad = true
		}
		hs = append(hs, h)
	})
	if err := c.p.epHealth(hs, c.stderr); err != nil {
		return err
	}
	if bad {
		return fail(exitError, "unhealthy cluster")
	}
	return nil
}

func epStatusCmd(c *cmdCtx) error {
	ss, ok, err := eachEndpoint(c, "Failed to get the status of endpoint %s (%v)\n",
		func(ctx context.Context, ep string, cl *client.Client) (epStatus, error) {
			r, err := cl.Status(ctx, ep)
			return epStatus{Ep: ep, Resp: r}, err
		})
	return printEach(err, ok, func() error { return c.p.epStatus(ss) })
}

func epHashKVCmd(c *cmdCtx) error {
	hs, ok, err := eachEndpoint(c, "Failed to get the hash of endpoint %s (%v)\n",
		func(ctx context.Context, ep string, cl *client.Client) (epHashKV, error) {
			r, err := cl.HashKV(ctx, ep, c.o.rev)
			return epHashKV{Ep: ep, Resp: r}, err
		})
	return printEach(err, ok, func() error { return c.p.epHashKV(hs) })
}

// eachEndpoint asks every endpoint with ask and collects the answers; an
// endpoint that fails is reported on stderr with failed (endpoint, error)
// and makes ok false.
func eachEndpoint[T any](c *cmdCtx, failed string, ask func(ctx context.Context, ep string, cl *client.Client) (T, error)) (out []T, ok bool, err error) {
	eps, err := c.endpointList()
	if err != nil {
		return nil, false, err
	}
	ok = true
	c.perEndpoint(eps, func(ep string, cl *client.Client, err error) {
		if err == nil {
			ctx, cancel := c.ctx()
			defer cancel()
			var v T
			if v, err = ask(ctx, ep, cl); err == nil {
				out = append(out, v)
				return
			}
		}
		fmt.Fprintf(c.stderr, failed, ep, err)
		ok = false
	})
	return out, ok, nil
}

// printEach prints what eachEndpoint collected, then fails quietly (the
// failures are on stderr already) if any endpoint failed.
func printEach(err error, ok bool, print func() error) error {
	if err != nil {
		return err
	}
	if err := print(); err != nil {
		return err
	}
	if !ok {
		return silent(exitError)
	}
	return nil
}

func defragCmd(c *cmdCtx) error {
	eps, err := c.endpointList()
	if err != nil {
		return err
	}
	bad := false
	c.perEndpoint(eps, func(ep string, cl *client.Client, err error) {
		st := time.Now()
		if err == nil {
			ctx, cancel := c.ctx()
			defer cancel()
			_, err = cl.Defragment(ctx, ep)
		}
		d := time.Since(st)
		if err != nil {
			fmt.Fprintf(c.stderr, "Failed to defragment etcd member[%s]. took %s. (%v)\n", ep, d, err)
			bad = true
			return
		}
		fmt.Fprintf(c.stdout, "Finished defragmenting etcd member[%s]. took %s\n", ep, d)
	})
	if bad {
		return silent(exitError)
	}
	return nil
}

// expectedSnapshotSize is the member's db size, what the snapshot will
// about weigh, or 0 when Status fails.
func expectedSnapshotSize(c *cmdCtx, cl *client.Client, ep string) int64 {
	ctx, cancel := c.ctx()
	defer cancel()
	st, err := cl.Status(ctx, ep)
	if err != nil {
		return 0
	}
	return st.GetDbSize()
}

// snapshotSaveCmd saves a member's backend snapshot. On a pipe it prints
// exactly what etcdctl prints; when stderr is a terminal it also shows
// the transfer's progress there, then the size and time taken.
func snapshotSaveCmd(c *cmdCtx) error {
	if len(c.args) != 1 {
		return fail(exitBadArgs, "snapshot save expects one argument <filename>")
	}
	path := c.args[0]
	eps := strings.Split(c.g.endpoints, ",")
	if len(eps) != 1 {
		return fail(exitError, "snapshot must be requested to one selected node, not multiple %v", eps)
	}
	cl, err := c.newClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	part := path + ".part"
	defer os.Remove(part)
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fail(exitInterrupted, "could not open %s (%v)", part, err)
	}
	defer f.Close()
	var dst io.Writer = f
	var progress *transferProgress
	if c.stderrIsTerminal {
		progress = newTransferProgress(c.stderr, expectedSnapshotSize(c, cl, eps[0]), time.Now)
		progress.Start(200 * time.Millisecond)
		dst = io.MultiWriter(f, progress)
	}
	rc, err := cl.Snapshot(context.Background())
	if err != nil {
		return fail(exitInterrupted, "%v", err)
	}
	defer rc.Close()
	_, err = io.Copy(dst, rc)
	if progress != nil {
		progress.Finish()
	}
	if err != nil {
		return fail(exitInterrupted, "%v", err)
	}
	if err := f.Sync(); err != nil {
		return fail(exitInterrupted, "%v", err)
	}
	if err := f.Close(); err != nil {
		return fail(exitInterrupted, "%v", err)
	}
	if err := os.Rename(part, path); err != nil {
		return fail(exitInterrupted, "could not rename %s to %s (%v)", part, path, err)
	}
	fmt.Fprintf(c.stdout, "Snapshot saved at %s\n", path)
	ctx, cancel := c.ctx()
	defer cancel()
	if st, err := cl.Status(ctx, eps[0]); err == nil && st.GetStorageVersion() != "" {
		fmt.Fprintf(c.stdout, "Server version %s\n", st.GetStorageVersion())
	}
	return nil
}
