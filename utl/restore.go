package utl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cairnkv/cairn/server/membership"
	"go.uber.org/zap"
)

// RestoreConfig is what `snapshot restore` needs; the fields mirror its flags.
type RestoreConfig struct {
	SnapshotPath string
	Name         string
	// DataDir defaults to Name+".etcd"; it must not exist or be empty.
	DataDir string
	// WALDir defaults to DataDir/member/wal; when given it must not exist.
	WALDir              string
	PeerURLs            []string
	InitialCluster      string
	InitialClusterToken string
	// SkipHashCheck accepts a db without the sha256 Maintenance.Snapshot
	// appends (one copied from a data dir) and skips the check otherwise.
	SkipHashCheck bool
	// InitialMmapSize is bbolt's initial mmap size; 0 means the default.
	InitialMmapSize uint64
	// RevisionBump raises the latest revision, MarkCompacted schedules a
	// compaction at it; etcd requires both or neither.
	RevisionBump  uint64
	MarkCompacted bool
	Logger        *zap.Logger
}

// errBumpWithoutCompact is etcdutl's text (its flag is --bump-revision).
var errBumpWithoutCompact = errors.New("--mark-compacted required if --revision-bump > 0")

// restorePlan is a validated RestoreConfig.
type restorePlan struct {
	cfg     RestoreConfig
	cl      *cluster
	dataDir string
	walDir  string
	snapDir string
}

func (p *restorePlan) dbPath() string { return filepath.Join(p.snapDir, "db") }

// Restore builds a new member's data dir from a snapshot as etcdutl does:
// the db is copied (checking its sha256), its membership replaced by the
// --initial-cluster members, its consistent index set to the bootstrap
// entries, and a WAL and .snap file written that start a new cluster whose
// raft log begins after those entries.
func Restore(cfg RestoreConfig) error {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	p, err := planRestore(cfg)
	if err != nil {
		return err
	}
	lg := cfg.Logger
	lg.Info("restoring snapshot", zap.String("path", cfg.SnapshotPath), zap.String("wal-dir", p.walDir),
		zap.String("data-dir", p.dataDir), zap.String("snap-dir", p.snapDir), zap.Uint64("initial-memory-map-size", cfg.InitialMmapSize))
	if err := copyAndVerifyDB(cfg.SnapshotPath, p.snapDir, cfg.SkipHashCheck); err != nil {
		return err
	}
	if err := rewriteDB(p); err != nil {
		return err
	}
	if err := writeRaftState(p); err != nil {
		return err
	}
	lg.Info("restored snapshot", zap.String("path", cfg.SnapshotPath), zap.String("wal-dir", p.walDir),
		zap.String("data-dir", p.dataDir), zap.String("snap-dir", p.snapDir), zap.Uint64("initial-memory-map-size", cfg.InitialMmapSize))
	return nil
}

// planRestore validates cfg in etcdutl's order and resolves the directories.
func planRestore(cfg RestoreConfig) (*restorePlan, error) {
	if (cfg.RevisionBump == 0) == cfg.MarkCompacted {
		return nil, errBumpWithoutCompact
	}
	cl, err := restoreCluster(cfg)
	if err != nil {
		return nil, err
	}
	p := &restorePlan{cfg: cfg, cl: cl, dataDir: cfg.DataDir, walDir: cfg.WALDir}
	if p.dataDir == "" {
		p.dataDir = cfg.Name + ".etcd"
	}
	if !dirEmpty(p.dataDir) {
		return nil, fmt.Errorf("data-dir %q not empty or could not be read", p.dataDir)
	}
	if p.walDir == "" {
		p.walDir = filepath.Join(p.dataDir, "member", "wal")
	} else if _, err := os.Stat(p.walDir); err == nil {
		return nil, fmt.Errorf("wal-dir %q exists", p.walDir)
	}
	p.snapDir = filepath.Join(p.dataDir, "member", "snap")
	return p, nil
}

func restoreCluster(cfg RestoreConfig) (*cluster, error) {
	peerURLs, err := membership.ParsePeerURLs(cfg.PeerURLs)
	if err != nil {
		return nil, err
	}
	initial, err := parseInitialCluster(cfg.InitialCluster)
	if err != nil {
		return nil, err
	}
	if err := verifyBootstrap(cfg.Name, peerURLs, initial); err != nil {
		return nil, err
	}
	return newCluster(initial, cfg.InitialClusterToken)
}

// dirEmpty reports whether dir is missing or an empty, readable directory.
func dirEmpty(dir string) bool {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return true
	}
	names, err := os.ReadDir(dir)
	return err == nil && len(names) == 0
}
