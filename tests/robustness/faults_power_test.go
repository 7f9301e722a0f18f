package robustness

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairnkv/cairn/tests/lazyfs"
)

// Power cuts: each member's data dir is a lazyfs mount (tests/lazyfs), and
// a power cut kills the member and drops every write it had not fsynced.
// They run only when $CAIRN_ROBUSTNESS_FAULTS names one of them, or when
// $CAIRN_ROBUSTNESS_POWER_CUTS=1 and an empty selection add them to every
// other fault, because the FUSE layer slows every
// member down and needs root and /dev/fuse.

// powerCutGroup is the $CAIRN_ROBUSTNESS_FAULTS name of all power cuts.
const powerCutGroup = "power-cut"

var powerCutFaults = []fault{
	{name: "power-cut", inject: powerCutFault},
	{name: "power-cut-leader", leader: true, inject: powerCutFault},
	{name: "power-cut-all", inject: powerCutAllFault},
}

func init() {
	if wantPowerCuts() {
		faults = append(faults, powerCutFaults...)
	}
}

// powerCutsEnv set to 1 makes the power cuts available (see above).
const powerCutsEnv = "CAIRN_ROBUSTNESS_POWER_CUTS"

// wantPowerCuts reports whether power cuts are asked for.
func wantPowerCuts() bool {
	if os.Getenv(powerCutsEnv) == "1" {
		return true
	}
	for _, name := range strings.Split(os.Getenv(faultsEnv), ",") {
		if strings.HasPrefix(strings.TrimSpace(name), powerCutGroup) {
			return true
		}
	}
	return false
}

// powerDisks maps a cluster's directory to its members' lazyfs mounts.
var powerDisks sync.Map // string -> []*lazyfs.FS

// mountPowerDisks mounts a lazyfs on each member's data dir under dir when
// power cuts are wanted. startCluster calls it before anything else, so
// that the mounts outlive the members.
func mountPowerDisks(t *testing.T, dir string, size int) {
	if !wantPowerCuts() {
		return
	}
	if err := lazyfs.Available(); err != nil {
		t.Skipf("power cuts asked for: %v", err)
	}
	disks := make([]*lazyfs.FS, size)
	for i := range size {
		mnt := filepath.Join(dir, fmt.Sprintf("m%d.disk", i))
		backing := filepath.Join(dir, fmt.Sprintf("m%d.backing", i))
		for _, d := range []string{mnt, backing} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		fs, err := lazyfs.Mount(mnt, backing, filepath.Join(dir, fmt.Sprintf("m%d.image", i)))
		if err != nil {
			t.Fatal(err)
		}
		disks[i] = fs
	}
	powerDisks.Store(dir, disks)
	t.Cleanup(func() {
		powerDisks.Delete(dir)
		for _, d := range disks {
			if err := d.Unmount(); err != nil {
				t.Errorf("unmount lazyfs: %v", err)
			}
		}
	})
}

// memberDataDir is the data dir of the member called name in a cluster
// under dir: inside the member's lazyfs mount when power cuts are wanted,
// so that a fault that replaces the member may remove it.
func memberDataDir(dir, name string) string {
	if wantPowerCuts() {
		return filepath.Join(dir, name+".disk", "etcd")
	}
	return filepath.Join(dir, name+".etcd")
}

// errNotOnLazyfs: the member was started after the cluster (a learner) and
// its data dir is an ordinary one.
var errNotOnLazyfs = errors.New("the member does not run on lazyfs")

func (c *cluster) powerDisk(i int) (*lazyfs.FS, error) {
	v, ok := powerDisks.Load(c.dir)
	if !ok || i >= len(v.([]*lazyfs.FS)) {
		return nil, errNotOnLazyfs
	}
	return v.([]*lazyfs.FS)[i], nil
}

// cutPower kills member i and drops its unsynced writes. A member not on
// lazyfs is only killed, and ev says so.
func (c *cluster) cutPower(i int, ev *faultEvent) error {
	disk, err := c.powerDisk(i)
	c.procs[i].kill()
	if errors.Is(err, errNotOnLazyfs) {
		ev.detail = strings.TrimPrefix(ev.detail+fmt.Sprintf("; m%d not on lazyfs: killed only", i), "; ")
		return nil
	}
	if err != nil {
		return err
	}
	return disk.PowerCut()
}

func powerCutFault(c *cluster, i int, _ *rand.Rand, ev *faultEvent) func() error {
	if err := c.cutPower(i, ev); err != nil {
		return func() error { return fmt.Errorf("power cut: %w", err) }
	}
	return c.procs[i].start
}

// powerCutAllFault cuts the power of every member at once; they come back
// together (one alone could not reach a quorum to become ready).
func powerCutAllFault(c *cluster, _ int, _ *rand.Rand, ev *faultEvent) func() error {
	ev.detail = "all members"
	for i := range c.procs {
		if err := c.cutPower(i, ev); err != nil {
			return func() error { return fmt.Errorf("power cut: %w", err) }
		}
	}
	return c.startAll
}
