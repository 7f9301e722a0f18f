package e2e

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/lazyfs"
)

// powerCutDisk mounts a lazyfs for one member's data dir, skipping where
// FUSE or root is missing.
func powerCutDisk(t *testing.T) (*lazyfs.FS, string) {
	t.Helper()
	if err := lazyfs.Available(); err != nil {
		t.Skip(err)
	}
	base := t.TempDir()
	mnt, backing := filepath.Join(base, "mnt"), filepath.Join(base, "backing")
	must(t, os.Mkdir(mnt, 0o700))
	must(t, os.Mkdir(backing, 0o700))
	lfs, err := lazyfs.Mount(mnt, backing, filepath.Join(base, "image"))
	if err != nil {
		t.Skipf("cannot mount lazyfs: %v", err)
	}
	t.Cleanup(func() { lfs.Unmount() })
	return lfs, mnt
}

// TestPowerCutLosesNoAcknowledgedWrite runs writers at full speed against a
// member on lazyfs and cuts the power at a random point: the restarted
// member has every acknowledged put at the revision it was acknowledged at,
// and its revisions have no hole (only unacknowledged puts above the last
// acknowledged one may be missing). CAIRN_POWER_CUTS sets the rounds.
func TestPowerCutLosesNoAcknowledgedWrite(t *testing.T) {
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	if n, err := strconv.Atoi(os.Getenv("CAIRN_POWER_CUTS")); err == nil {
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	lfs, mnt := powerCutDisk(t)
	m := startMember(t, memberOpts{dataDir: filepath.Join(mnt, "m0.etcd"), args: []string{"--snapshot-count", "500"}})
	cut := func() {
		m.kill()
		must(t, lfs.PowerCut())
	}
	crashRounds(t, m, rounds, "cut", "power cut", func() int { return 100 + rng.IntN(1500) }, cut)
}
