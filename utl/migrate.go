package utl

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairnkv/cairn/server/wal/walpb"
	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/snap"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/wal"
)

// The storage schema versions cairnutl migrate knows, as etcd v3.7's: v3.6
// added the storageVersion key of the meta bucket, v3.7 changed nothing.
// A v3.5 db has no storageVersion key (it is recognised by its confState
// and term keys); below v3.5 there is no schema to migrate.
var (
	minStorageVersion = wal.Version{Major: 3, Minor: 5}
	schemaVersions    = map[wal.Version]bool{{Major: 3, Minor: 6}: true, {Major: 3, Minor: 7}: true}
)

// MigrateConfig is one `cairnutl migrate`.
type MigrateConfig struct {
	DataDir string
	Target  wal.Version
	Force   bool // set the target version even where migration fails
	Timeout time.Duration
	Logger  *zap.Logger
}

func runMigrate(e *env, args []string) error {
	var dataDir, target string
	var force bool
	define := func(fs *flag.FlagSet) {
		fs.StringVar(&dataDir, "data-dir", "", "Path to the etcd data dir")
		fs.BoolVar(&force, "force", false, "Ignore migration failure and forcefully override storage version. Not recommended.")
		fs.StringVar(&target, "target-version", "", `Target etcd version to migrate contents of data dir. Minimal value 3.5. Format "X.Y" for example 3.6.`)
	}
	if _, err := e.parseCommand("migrate", args, define); err != nil {
		return err
	}
	if dataDir == "" {
		return withUsage(errors.New(`required flag(s) "data-dir" not set`), "migrate", define)
	}
	v, err := parseTargetVersion(target)
	if err != nil {
		return &exitError{code: exitBadArgs, err: err}
	}
	lg := e.logger()
	defer lg.Sync()
	return Migrate(MigrateConfig{DataDir: dataDir, Target: v, Force: force, Timeout: e.timeout, Logger: lg})
}

// parseTargetVersion reads --target-version: exactly "X.Y", at least 3.5.
func parseTargetVersion(s string) (wal.Version, error) {
	if strings.Count(s, ".") != 1 {
		return wal.Version{}, fmt.Errorf(`wrong target version format, expected "X.Y", got %q`, s)
	}
	majorS, minorS, _ := strings.Cut(s, ".")
	major, err := strconv.ParseInt(majorS, 10, 64)
	if err == nil {
		var minor int64
		if minor, err = strconv.ParseInt(minorS, 10, 64); err == nil {
			v := wal.Version{Major: int(major), Minor: int(minor)}
			if v.Less(minStorageVersion) {
				return wal.Version{}, fmt.Errorf(`target version %q not supported. Minimal "3.5"`, shortVer(v))
			}
			return v, nil
		}
	}
	return wal.Version{}, fmt.Errorf("failed to parse target version: %w", err)
}

// shortVer is "X.Y", as etcd logs storage versions.
func shortVer(v wal.Version) string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Migrate moves the storage schema of a data dir no member is using to
// cfg.Target, one minor version at a time, as etcdutl migrate does. A
// downgrade is refused while the WAL after the last snapshot holds entries
// the target version cannot read.
func Migrate(cfg MigrateConfig) error {
	lg := cfg.Logger
	dbPath := BackendPath(cfg.DataDir)
	if _, err := os.Stat(dbPath); err != nil {
		return err
	}
	walVersion, walHasVersion, err := walMinimalVersion(lg, cfg.DataDir)
	if err != nil {
		lg.Error("Failed to finalize config", zap.Error(err))
		return err
	}
	db, err := bolt.Open(dbPath, 0o600, &bolt.Options{Timeout: cfg.Timeout})
	if err != nil {
		return fmt.Errorf("failed to open database %s: %w", dbPath, err)
	}
	defer db.Close()
	return db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(backend.BucketMeta)
		if meta == nil {
			return errors.New("missing meta bucket")
		}
		current, err := detectStorageVersion(meta)
		if err != nil {
			lg.Error("failed to detect storage version. Please make sure you are using data dir from etcd v3.5 and older")
			return err
		}
		if current == cfg.Target {
			lg.Info("storage version up-to-date", zap.String("storage-version", shortVer(current)))
			return nil
		}
		err = migrateSchema(lg, meta, current, cfg.Target, walVersion, walHasVersion)
		if err == nil || !cfg.Force {
			return err
		}
		lg.Info("normal migrate failed, trying with force", zap.Error(err))
		return forceStorageVersion(lg, meta, cfg.Target)
	})
}

// walMinimalVersion is the oldest etcd version able to read the data dir's
// WAL from its newest snapshot on.
func walMinimalVersion(lg *zap.Logger, dataDir string) (wal.Version, bool, error) {
	walDir := filepath.Join(dataDir, "member", "wal")
	walSnaps, err := wal.ValidSnapshotEntries(lg, walDir)
	if err != nil {
		return wal.Version{}, false, fmt.Errorf("failed to get the lastest snapshot: %w", err)
	}
	var start walpb.Snapshot
	s, err := snap.New(lg, filepath.Join(dataDir, "member", "snap")).LoadNewestAvailable(walSnaps)
	switch {
	case err == nil:
		start.Index, start.Term = s.GetMetadata().GetIndex(), s.GetMetadata().GetTerm()
	case !errors.Is(err, snap.ErrNoSnapshot):
		return wal.Version{}, false, fmt.Errorf("failed to get the lastest snapshot: %w", err)
	}
	w, err := wal.OpenForRead(lg, walDir, start)
	if err != nil {
		return wal.Version{}, false, fmt.Errorf("failed to open wal: %w", err)
	}
	defer w.Close()
	_, _, ents, err := w.ReadAll()
	if err != nil {
		return wal.Version{}, false, fmt.Errorf("failed to read wal: %w", err)
	}
	v, found, err := wal.MinimalEtcdVersion(ents)
	if err != nil {
		return wal.Version{}, false, fmt.Errorf("failed to read wal: %w", err)
	}
	return v, found, nil
}

// detectStorageVersion is the db's schema version: its storageVersion key
// (v3.6 on), else v3.5 if it has the keys v3.5 added.
func detectStorageVersion(meta *bolt.Bucket) (wal.Version, error) {
	if raw := meta.Get(backend.MetaStorageVersion); raw != nil {
		return wal.ParseVersion(string(raw))
	}
	if meta.Get(backend.MetaConfState) == nil {
		return wal.Version{}, errors.New("missing confstate information")
	}
	if term := meta.Get(backend.MetaTerm); len(term) != 8 || allZero(term) {
		return wal.Version{}, errors.New("missing term information")
	}
	return minStorageVersion, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// migrateSchema walks from current to target one minor version at a time.
func migrateSchema(lg *zap.Logger, meta *bolt.Bucket, current, target, walVersion wal.Version, walHasVersion bool) error {
	steps, err := migrationSteps(lg, current, target)
	if err != nil {
		return fmt.Errorf("cannot create migration plan: %w", err)
	}
	if target.Less(current) && walHasVersion && target.Less(walVersion) {
		return fmt.Errorf("cannot downgrade storage, WAL contains newer entries, as the target version (%s) is lower than the version (%s) detected from WAL logs", target, walVersion)
	}
	for _, v := range steps {
		if err := setStorageVersion(meta, v); err != nil {
			return err
		}
		lg.Info("updated storage version", zap.String("new-storage-version", v.String()))
	}
	return nil
}

// migrationSteps lists the versions a migration passes through, ending at
// target; every step must cross a known schema version.
func migrationSteps(lg *zap.Logger, current, target wal.Version) ([]wal.Version, error) {
	if current.Major != target.Major {
		lg.Error("Changing major storage version is not supported",
			zap.String("storage-version", current.String()), zap.String("target-storage-version", target.String()))
		return nil, errors.New("changing major storage version is not supported")
	}
	var steps []wal.Version
	for current != target {
		next, changed := current, current
		if current.Less(target) {
			next.Minor++
			changed = next
		} else {
			next.Minor--
		}
		if !schemaVersions[changed] {
			return nil, fmt.Errorf("version %q is not supported", changed.String())
		}
		steps = append(steps, next)
		current = next
	}
	return steps, nil
}

// setStorageVersion writes v's schema marker: none for v3.5 and older.
func setStorageVersion(meta *bolt.Bucket, v wal.Version) error {
	if v.Less(wal.Version{Major: 3, Minor: 6}) {
		return meta.Delete(backend.MetaStorageVersion)
	}
	return meta.Put(backend.MetaStorageVersion, []byte(v.String()))
}

func forceStorageVersion(lg *zap.Logger, meta *bolt.Bucket, target wal.Version) error {
	if err := setStorageVersion(meta, target); err != nil {
		return err
	}
	if target.Less(wal.Version{Major: 3, Minor: 6}) {
		lg.Warn("forcefully cleared storage version")
	} else {
		lg.Warn("forcefully set storage version", zap.String("storage-version", shortVer(target)))
	}
	return nil
}
