package etcdserver

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/lease"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// The key index checkpoint (a cairn extension, --experimental-index-checkpoint):
// Stop writes the mvcc store's key index to member/index.ckpt once the
// backend's last commit is done, and the next start of the stores loads it
// instead of reading every revision of the db. The mvcc store uses it only
// if the db is still at the commit it names (see mvcc's checkpoint.go), so
// a crash, a copied data dir, etcd or cairnutl writing the db in between,
// or a damaged file just mean a normal rebuild.

// indexCheckpointPath is where the checkpoint lives, "" when disabled.
func (c *Config) indexCheckpointPath() string {
	if !c.IndexCheckpoint {
		return ""
	}
	return filepath.Join(c.memberDir(), "index.ckpt")
}

// writeIndexCheckpoint saves the key index of the closed stores where c
// says. leased are the lessor's attachments, taken before the stores
// closed. Stop calls it, holding mu for writing.
func (st *stores) writeIndexCheckpoint(c *Config, leased []mvcc.LeasedKey) {
	path := c.indexCheckpointPath()
	if path == "" {
		// A checkpoint left by an earlier run with the option on would
		// only be found stale; do not keep it around.
		_ = os.Remove(filepath.Join(c.memberDir(), "index.ckpt"))
		return
	}
	start := time.Now()
	if err := st.kv.WriteIndexCheckpoint(path, st.be.CommitID(), leased); err != nil {
		st.lg.Info("not writing the key index checkpoint", zap.String("path", path), zap.Error(err))
		return
	}
	st.lg.Info("wrote the key index checkpoint", zap.String("path", path),
		zap.Int("keys", st.kv.KeyCount()), zap.Duration("took", time.Since(start)))
}

// leasedKeys lists every key attached to a lease, in key order: what the
// mvcc store's rebuild would report (TakeRestoredLeases) for the same db.
func leasedKeys(l *lease.Lessor) []mvcc.LeasedKey {
	var leased []mvcc.LeasedKey
	for _, ls := range l.Leases() {
		for _, k := range ls.Keys() {
			leased = append(leased, mvcc.LeasedKey{Key: []byte(k), Lease: int64(ls.ID())})
		}
	}
	slices.SortFunc(leased, func(a, b mvcc.LeasedKey) int { return strings.Compare(string(a.Key), string(b.Key)) })
	return leased
}
