package utl

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.uber.org/zap"
)

// DefaultClusterRevisionBump is `snapshot restore-cluster`'s default
// --bump-revision: far past any revision a client of the old cluster can
// have seen, so no watcher or informer sees the store go back in time.
const DefaultClusterRevisionBump = 1_000_000_000

// RestoreClusterConfig is what `snapshot restore-cluster` needs: every
// member of --initial-cluster is restored from one snapshot, each with the
// same single-member Restore, the same membership and the same bump.
type RestoreClusterConfig struct {
	SnapshotPath        string
	InitialCluster      string
	InitialClusterToken string
	// DataDirPrefix puts member NAME in DataDirPrefix/NAME.etcd (just
	// NAME.etcd when empty). DataDirs, when set, names every member's dir
	// instead; the two are exclusive.
	DataDirPrefix   string
	DataDirs        map[string]string
	SkipHashCheck   bool
	InitialMmapSize uint64
	RevisionBump    uint64
	MarkCompacted   bool
	Logger          *zap.Logger
}

// RestoredMember is one member RestoreCluster wrote.
type RestoredMember struct {
	Name     string
	ID       uint64
	PeerURLs []string
	DataDir  string
}

// RestoreCluster validates every member's restore before writing any, then
// restores them in name order, calling done after each one. If a restore
// fails, the data dirs written so far are removed again (a dir that existed
// empty before is emptied), so a retry starts clean.
func RestoreCluster(cfg RestoreClusterConfig, done func(RestoredMember)) error {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.DataDirPrefix != "" && cfg.DataDirs != nil {
		return errors.New("--data-dir-prefix and --data-dirs are mutually exclusive")
	}
	initial, err := parseInitialCluster(cfg.InitialCluster)
	if err != nil {
		return err
	}
	if len(initial) == 0 {
		return errors.New("--initial-cluster lists no members")
	}
	cl, err := newCluster(initial, cfg.InitialClusterToken)
	if err != nil {
		return err
	}
	dirs, err := clusterDataDirs(cfg, sortedNames(initial))
	if err != nil {
		return err
	}
	var cfgs []RestoreConfig
	for _, name := range sortedNames(initial) {
		rc := RestoreConfig{
			SnapshotPath: cfg.SnapshotPath, Name: name, DataDir: dirs[name],
			PeerURLs: initial[name], InitialCluster: cfg.InitialCluster, InitialClusterToken: cfg.InitialClusterToken,
			SkipHashCheck: cfg.SkipHashCheck, InitialMmapSize: cfg.InitialMmapSize,
			RevisionBump: cfg.RevisionBump, MarkCompacted: cfg.MarkCompacted, Logger: cfg.Logger,
		}
		if _, err := planRestore(rc); err != nil {
			return fmt.Errorf("member %q: %w", name, err)
		}
		cfgs = append(cfgs, rc)
	}
	var written []string
	existed := map[string]bool{}
	for _, rc := range cfgs {
		if _, err := os.Stat(rc.DataDir); err == nil {
			existed[rc.DataDir] = true
		}
		written = append(written, rc.DataDir)
		if err := Restore(rc); err != nil {
			undoRestores(written, existed)
			return fmt.Errorf("member %q: %w", rc.Name, err)
		}
		m := cl.memberByName(rc.Name)
		if done != nil {
			done(RestoredMember{Name: rc.Name, ID: m.ID, PeerURLs: m.PeerURLs, DataDir: rc.DataDir})
		}
	}
	return nil
}

// clusterDataDirs resolves each member's data dir and requires them distinct.
func clusterDataDirs(cfg RestoreClusterConfig, names []string) (map[string]string, error) {
	dirs := make(map[string]string, len(names))
	for _, name := range names {
		if cfg.DataDirs == nil {
			dirs[name] = filepath.Join(cfg.DataDirPrefix, name+".etcd")
			continue
		}
		d, ok := cfg.DataDirs[name]
		if !ok || d == "" {
			return nil, fmt.Errorf("--data-dirs has no data dir for member %q", name)
		}
		dirs[name] = d
	}
	for name := range cfg.DataDirs {
		if _, ok := dirs[name]; !ok {
			return nil, fmt.Errorf("--data-dirs names %q, which is not in --initial-cluster", name)
		}
	}
	seen := map[string]string{}
	for _, name := range names {
		abs, err := filepath.Abs(dirs[name])
		if err != nil {
			return nil, err
		}
		if other, ok := seen[abs]; ok {
			return nil, fmt.Errorf("members %q and %q share data dir %q", other, name, dirs[name])
		}
		seen[abs] = name
	}
	return dirs, nil
}

// undoRestores removes what RestoreCluster wrote into dirs.
func undoRestores(dirs []string, existed map[string]bool) {
	for _, d := range dirs {
		if !existed[d] {
			os.RemoveAll(d)
			continue
		}
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			os.RemoveAll(filepath.Join(d, e.Name()))
		}
	}
}

// parseDataDirs parses --data-dirs "name=dir,name=dir".
func parseDataDirs(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		name, dir, ok := strings.Cut(item, "=")
		if !ok || name == "" || dir == "" {
			return nil, fmt.Errorf("invalid --data-dirs item %q (want name=dir)", item)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--data-dirs names %q twice", name)
		}
		out[name] = dir
	}
	return out, nil
}

// restoreClusterFlags are `snapshot restore-cluster`'s flags.
type restoreClusterFlags struct {
	cfg      RestoreClusterConfig
	dataDirs string
}

func (r *restoreClusterFlags) define(fs *flag.FlagSet) {
	c := &r.cfg
	fs.StringVar(&c.InitialCluster, "initial-cluster", "", "Required. Every member of the restored cluster, name=peer-url,...")
	fs.StringVar(&c.InitialClusterToken, "initial-cluster-token", "etcd-cluster", "Initial cluster token of the restored cluster")
	fs.StringVar(&c.DataDirPrefix, "data-dir-prefix", "", "Directory to write each member's data dir in, as <dir>/<name>.etcd (default: the current directory)")
	fs.StringVar(&r.dataDirs, "data-dirs", "", "Each member's data dir, name=dir,... (instead of --data-dir-prefix; must name every member)")
	defineSnapshotDBFlags(fs, &c.SkipHashCheck, &c.InitialMmapSize)
	fs.Uint64Var(&c.RevisionBump, "bump-revision", DefaultClusterRevisionBump, "How much to increase the latest revision after restore (0 requires --mark-compacted=false)")
	fs.BoolVar(&c.MarkCompacted, "mark-compacted", true, "Mark the bumped revision as compacted, so watches from older revisions fail with a compaction error")
}

func runRestoreCluster(e *env, args []string) error {
	r := &restoreClusterFlags{}
	const name = "snapshot restore-cluster"
	pos, err := e.parseCommand(name, args, r.define)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return badArgs("snapshot restore-cluster requires exactly one argument")
	}
	if r.cfg.InitialCluster == "" {
		return withUsage(errors.New(`required flag(s) "initial-cluster" not set`), name, r.define)
	}
	if (r.cfg.RevisionBump == 0) == r.cfg.MarkCompacted {
		return &exitError{code: exitBadArgs, err: errors.New("--mark-compacted requires --bump-revision > 0 (use --bump-revision 0 --mark-compacted=false to keep the revision)")}
	}
	if r.cfg.DataDirs, err = parseDataDirs(r.dataDirs); err != nil {
		return badArgs("%v", err)
	}
	cfg := r.cfg
	cfg.SnapshotPath = pos[0]
	return RestoreCluster(cfg, func(m RestoredMember) {
		fmt.Fprintln(e.stdout, restoredLine(m, cfg))
	})
}

// restoredLine is the line printed for each member written.
func restoredLine(m RestoredMember, cfg RestoreClusterConfig) string {
	urls := append([]string(nil), m.PeerURLs...)
	sort.Strings(urls)
	rev := "revision kept"
	if cfg.RevisionBump > 0 {
		rev = fmt.Sprintf("revision bumped by %d and marked compacted", cfg.RevisionBump)
	}
	return fmt.Sprintf("restored snapshot %s for member %s (ID %x, peer URLs %s) into data-dir %s, %s",
		cfg.SnapshotPath, m.Name, m.ID, strings.Join(urls, ","), m.DataDir, rev)
}
