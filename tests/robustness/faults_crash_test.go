package robustness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Faults that need more than a signal or a proxy: a crash at a failpoint
// (cairn built with -tags failpoints) and a disk that fills up, with the
// operator's recovery (compact, defragment, disarm the alarm).

const (
	// crashBound is how long an armed crash point may take to be reached
	// before it is disarmed again.
	crashBound = 5 * time.Second
	// behindEntries is how far an isolated member is left behind so that
	// it catches up through a snapshot: more than --snapshot-count plus
	// --snapshot-catchup-entries.
	behindEntries = 300
	// behindBound bounds the wait for the others to move on that far.
	behindBound = 8 * time.Second
	// diskFullMargin is how much the disk-full fault lets a member's
	// backend grow before its quota is reached.
	diskFullMargin = 32 << 10
	// alarmBound is how long the disk-full fault waits for the NOSPACE
	// alarm.
	alarmBound = 10 * time.Second
)

// crashPoint is a failpoint members are crashed at, and what makes the
// armed member pass it (nil: the traffic does).
type crashPoint struct {
	name    string
	trigger func(c *cluster, i int) error
}

// crashPoints are the points where crash-recovery bugs hide: around the
// WAL save, the apply of an entry, the backend commit and its pre-commit
// hook (the consistent index), the WAL release after a snapshot, the
// install of a snapshot from the leader, compaction and defragmentation.
var crashPoints = []crashPoint{
	{name: "raftBeforeSave"},
	{name: "raftAfterSave"},
	{name: "raftBeforeLeaderSend"},
	{name: "raftBeforeFollowerSend"},
	{name: "beforeApplyOneEntryNormal"},
	{name: "afterApplyOneEntry"},
	{name: "commitBeforePreCommitHook"},
	{name: "commitAfterPreCommitHook"},
	{name: "beforeCommit"},
	{name: "afterCommit"},
	{name: "raftAfterWALRelease"},
	{name: "raftBeforeSaveSnap", trigger: fallBehind},
	{name: "raftAfterSaveSnap", trigger: fallBehind},
	{name: "raftBeforeApplySnap", trigger: fallBehind},
	{name: "raftAfterApplySnap", trigger: fallBehind},
	{name: "applyBeforeOpenSnapshot", trigger: fallBehind},
	{name: "compactBeforeCommitScheduledCompact", trigger: compactOther},
	{name: "compactBeforeCommitBatch", trigger: compactOther},
	{name: "compactBeforeSetFinishedCompact", trigger: compactOther},
	{name: "compactAfterSetFinishedCompact", trigger: compactOther},
	{name: "defragBeforeCopy", trigger: defragOf},
	{name: "defragDuringCopy", trigger: defragOf},
	{name: "defragDuringCatchUp", trigger: defragOf},
	{name: "defragBeforeSwap", trigger: defragOf},
	{name: "defragBeforeRename", trigger: defragOf},
	{name: "defragAfterRename", trigger: defragOf},
	{name: "defragAfterSwap", trigger: defragOf},
}

// failpointFault arms a crash point on member i over HTTP, makes the
// member reach it, waits until it died (or disarms the point after
// crashBound) and restarts it. A member that exits without naming the
// point in its log crashed for another reason: that fails the run.
func failpointFault(c *cluster, i int, rng *rand.Rand, ev *faultEvent) func() error {
	return crashAt(c, i, crashPoints[rng.IntN(len(crashPoints))], ev)
}

// defragCrashFault crashes member i at one of the steps of its online
// defrag, chosen by rng, while the traffic goes on.
func defragCrashFault(c *cluster, i int, rng *rand.Rand, ev *faultEvent) func() error {
	var points []crashPoint
	for _, p := range crashPoints {
		if strings.HasPrefix(p.name, "defrag") {
			points = append(points, p)
		}
	}
	return crashAt(c, i, points[rng.IntN(len(points))], ev)
}

// defragFault defragments member i under the traffic; an online defrag
// must succeed and fail no request.
func defragFault(c *cluster, i int, _ *rand.Rand, ev *faultEvent) func() error {
	start := time.Now()
	err := defragOf(c, i)
	ev.detail = fmt.Sprintf("took %v", time.Since(start).Round(time.Millisecond))
	return func() error { return err }
}

// crashAt arms crash point p on member i and has it reached (see
// failpointFault).
func crashAt(c *cluster, i int, p crashPoint, ev *faultEvent) func() error {
	restart := func() error {
		if c.procs[i].running() {
			return nil
		}
		return c.procs[i].start()
	}
	if err := c.failpointRequest(i, http.MethodPut, p.name, "panic"); err != nil {
		ev.detail = p.name + ": not armed"
		return func() error { return err }
	}
	var triggerErr error
	if p.trigger != nil {
		triggerErr = p.trigger(c, i)
	}
	if !c.procs[i].waitExit(crashBound) {
		ev.detail = p.name + ": not reached"
		if err := c.failpointRequest(i, http.MethodDelete, p.name, ""); err != nil && c.procs[i].running() {
			return func() error { return err }
		}
		if triggerErr != nil {
			ev.detail += " (" + shortErr(triggerErr) + ")"
		}
	}
	if c.procs[i].running() {
		return restart
	}
	if err := c.procs[i].crashedAt(p.name); err != nil {
		ev.detail = p.name + ": " + err.Error()
		return func() error { return err }
	}
	ev.detail = p.name + ": crashed"
	return restart
}

// failpointRequest arms (PUT) or disarms (DELETE) a failpoint of member i.
func (c *cluster) failpointRequest(i int, method, name, body string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.endpoints[i]+"/failpoints/"+name, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("%s /failpoints/%s on m%d: %d %s", method, name, i, resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}

// waitExit waits up to d for the process to exit.
func (p *proc) waitExit(d time.Duration) bool {
	select {
	case <-p.h.Exited():
		return true
	case <-time.After(d):
		return false
	}
}

// crashedAt checks that the process's last words name failpoint name.
func (p *proc) crashedAt(name string) error {
	log, err := p.h.LogSince()
	if err != nil {
		return err
	}
	if !strings.Contains(log, "failpoint panic: "+name+"\n") {
		return fmt.Errorf("%s exited, but not at failpoint %s (log %s)", p.name, name, p.logPath)
	}
	return nil
}

// other returns a running member other than i, or -1.
func (c *cluster) other(i int) int {
	for j := range c.procs {
		if j != i && c.procs[j].running() {
			return j
		}
	}
	return -1
}

// fallBehind cuts member i off until the others' raft log has grown by
// behindEntries (or behindBound passed), so that the leader sends it a
// snapshot when it is healed. Lease grants grow the log without the
// traffic's help and without touching a key or the revision, so the
// history the checker sees is the traffic's alone.
func fallBehind(c *cluster, i int) error {
	j := c.other(i)
	start, err := c.raftIndex(j)
	if err != nil {
		return err
	}
	c.isolate(i)
	defer c.heal(i)
	ctx, cancel := context.WithTimeout(context.Background(), behindBound)
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if r, err := c.raftIndex(j); err == nil && r-start >= behindEntries {
					cancel()
					return
				}
				for range 10 {
					_, _ = c.admin[j].Grant(ctx, leaseTTL)
				}
			}
		})
	}
	wg.Wait()
	if r, err := c.raftIndex(j); err != nil || r-start < behindEntries {
		return errors.New("the others did not move on far enough")
	}
	return nil
}

// raftIndex is member j's raft index.
func (c *cluster) raftIndex(j int) (uint64, error) {
	if j < 0 {
		return 0, errors.New("no other member runs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := c.admin[j].Status(ctx, c.endpoints[j])
	if err != nil {
		return 0, err
	}
	return st.RaftIndex, nil
}

// compactOther compacts the cluster through a member other than i (which
// applies the compaction like every member).
func compactOther(c *cluster, i int) error {
	_, err := c.compactHistory(c.other(i))
	return err
}

// defragOf defragments member i.
func defragOf(c *cluster, i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), crashBound)
	defer cancel()
	_, err := c.admin[i].Defragment(ctx, c.endpoints[i])
	return err
}

// compactHistory compacts at the current revision, as an operator would,
// after archiving the history the compaction removes. Member j reads the
// revision and the history and sends the compaction.
func (c *cluster) compactHistory(j int) (int64, error) {
	if j < 0 {
		return 0, errors.New("no member to compact through")
	}
	rev, err := c.syncRevision(j)
	if err != nil {
		return 0, err
	}
	if err := c.archive.save(c.admin[j], rev); err != nil {
		return 0, err
	}
	c.archive.noteCompaction(rev, time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.admin[j].Compact(ctx, rev, clientv3.WithCompactPhysical())
	if errors.Is(err, rpctypes.ErrCompacted) {
		err = nil // nothing was written since the last compaction
	}
	return rev, err
}

// diskFullFault restarts member i with a quota just above its backend's
// size, so that the traffic fills it up and the member raises the
// NOSPACE alarm, which makes the whole cluster refuse writes. The undo is
// the operator's: give the member its space back, compact, defragment
// every member, disarm the alarm.
func diskFullFault(c *cluster, i int, _ *rand.Rand, ev *faultEvent) func() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	st, err := c.admin[i].Status(ctx, c.endpoints[i])
	cancel()
	if err != nil {
		return func() error { return fmt.Errorf("status of m%d: %w", i, err) }
	}
	quota := st.DbSize + diskFullMargin
	c.procs[i].stop()
	c.procs[i].extra = []string{"--quota-backend-bytes", strconv.FormatInt(quota, 10)}
	if err := c.procs[i].start(); err != nil {
		return func() error { return err }
	}
	start := time.Now()
	if c.waitAlarm(i, alarmBound) {
		ev.detail = fmt.Sprintf("quota %d bytes: NOSPACE alarm after %v", quota, time.Since(start).Round(time.Millisecond))
	} else {
		ev.detail = fmt.Sprintf("quota %d bytes: no NOSPACE alarm within %v", quota, alarmBound)
	}
	return func() error { return c.recoverSpace(i) }
}

// waitAlarm waits up to d until member i reports a NOSPACE alarm.
func (c *cluster) waitAlarm(i int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := c.admin[i].AlarmList(ctx)
		cancel()
		if err == nil && hasNoSpace(resp.Alarms) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func hasNoSpace(alarms []*pb.AlarmMember) bool {
	for _, a := range alarms {
		if a.Alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

// recoverSpace undoes diskFullFault: member i gets its default quota back
// (a restart), then the operator compacts, defragments every member and
// disarms the alarms; none may remain.
func (c *cluster) recoverSpace(i int) error {
	c.procs[i].stop()
	c.procs[i].extra = nil
	if err := c.procs[i].start(); err != nil {
		return err
	}
	if _, err := c.compactHistory(i); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for j := range c.procs {
		if _, err := c.admin[j].Defragment(ctx, c.endpoints[j]); err != nil {
			return fmt.Errorf("defragment m%d: %w", j, err)
		}
	}
	if _, err := c.admin[i].AlarmDisarm(ctx, &clientv3.AlarmMember{}); err != nil {
		return fmt.Errorf("disarm: %w", err)
	}
	resp, err := c.admin[i].AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("alarm list: %w", err)
	}
	if len(resp.Alarms) > 0 {
		return fmt.Errorf("alarms left after disarming: %v", resp.Alarms)
	}
	return nil
}
