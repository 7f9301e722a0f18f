package utl

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/cairnkv/cairn/server/config"
)

func runStatus(e *env, args []string) error {
	pos, err := e.parseCommand("snapshot status", args, nil)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return badArgs("snapshot status requires exactly one argument")
	}
	if err := checkFormat(e.writeOut); err != nil {
		return &exitError{code: exitBadFeature, err: err}
	}
	st, err := SnapshotStatus(pos[0])
	if err != nil {
		return err
	}
	return printReport(e.stdout, e.writeOut, statusReport(st))
}

// restoreFlags are `snapshot restore`'s flags with etcdutl's defaults.
type restoreFlags struct {
	cfg      RestoreConfig
	peerURLs string
}

// defaultMmapSize is etcd's backend.InitialMmapSize (10 GiB).
const defaultMmapSize = 10 * 1024 * 1024 * 1024

func (r *restoreFlags) define(fs *flag.FlagSet) {
	c := &r.cfg
	fs.StringVar(&c.DataDir, "data-dir", "", "Path to the output data directory")
	fs.StringVar(&c.WALDir, "wal-dir", "", "Path to the WAL directory (use --data-dir if none given)")
	fs.StringVar(&c.InitialCluster, "initial-cluster", "default=http://localhost:2380", "Initial cluster configuration for restore bootstrap")
	fs.StringVar(&c.InitialClusterToken, "initial-cluster-token", "etcd-cluster", "Initial cluster token for the etcd cluster during restore bootstrap")
	fs.StringVar(&r.peerURLs, "initial-advertise-peer-urls", "http://localhost:2380", "List of this member's peer URLs to advertise to the rest of the cluster")
	fs.StringVar(&c.Name, "name", "default", "Human-readable name for this member")
	defineSnapshotDBFlags(fs, &c.SkipHashCheck, &c.InitialMmapSize)
	fs.Uint64Var(&c.RevisionBump, "bump-revision", 0, "How much to increase the latest revision after restore")
	fs.BoolVar(&c.MarkCompacted, "mark-compacted", false, "Mark the latest revision after restore as the point of scheduled compaction (required if --bump-revision > 0, disallowed otherwise)")
}

// defineSnapshotDBFlags adds the flags that both restore commands take
// with one meaning: whether the snapshot's hash is checked, and how large
// the restored db is first mapped.
func defineSnapshotDBFlags(fs *flag.FlagSet, skipHashCheck *bool, mmapSize *uint64) {
	fs.BoolVar(skipHashCheck, "skip-hash-check", false, "Ignore snapshot integrity hash value (required if copied from data directory)")
	fs.Uint64Var(mmapSize, "initial-memory-map-size", defaultMmapSize, "Initial memory map size of the database in bytes. It uses the default value if not defined or defined to 0")
}

func runRestore(e *env, args []string) error {
	r := &restoreFlags{}
	pos, err := e.parseCommand("snapshot restore", args, r.define)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return badArgs("snapshot restore requires exactly one argument")
	}
	if (r.cfg.RevisionBump == 0) == r.cfg.MarkCompacted {
		return &exitError{code: exitBadArgs, err: errBumpWithoutCompact}
	}
	cfg := r.cfg
	cfg.SnapshotPath = pos[0]
	cfg.PeerURLs = strings.Split(r.peerURLs, ",")
	cfg.Logger = e.logger()
	defer cfg.Logger.Sync()
	return Restore(cfg)
}

func runDefrag(e *env, args []string) error {
	var dataDir string
	define := func(fs *flag.FlagSet) {
		fs.StringVar(&dataDir, "data-dir", "", "Required. Defragments a data directory not in use by etcd.")
	}
	pos, err := e.parseCommand("defrag", args, define)
	if err != nil {
		return err
	}
	if dataDir == "" {
		return withUsage(errors.New(`required flag(s) "data-dir" not set`), "defrag", define)
	}
	_ = pos // etcdutl ignores extra arguments
	if err := Defrag(dataDir, e.timeout); err != nil {
		return fmt.Errorf("Failed to defragment etcd data[%s] (%w)", dataDir, err)
	}
	return nil
}

func runHashKV(e *env, args []string) error {
	var rev int64
	define := func(fs *flag.FlagSet) {
		fs.Int64Var(&rev, "rev", 0, "maximum revision to hash (default: latest revision)")
	}
	pos, err := e.parseCommand("hashkv", args, define)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return withUsage(fmt.Errorf("accepts 1 arg(s), received %d", len(pos)), "hashkv <filename>", define)
	}
	if err := checkFormat(e.writeOut); err != nil {
		return &exitError{code: exitBadFeature, err: err}
	}
	h, err := HashKVFile(pos[0], rev, e.timeout)
	if err != nil {
		return err
	}
	return printReport(e.stdout, e.writeOut, hashKVReport(h))
}

// runVersion prints cairnutl's own version, then the etcdutl and API
// versions it is compatible with in etcdutl's exact form, so tools parsing
// `etcdutl version` find the lines they expect.
func runVersion(e *env, args []string) error {
	if _, err := e.parseCommand("version", args, nil); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "cairnutl version:", config.CairnVersion)
	fmt.Fprintln(e.stdout, "etcdutl version:", config.EtcdVersion)
	fmt.Fprintln(e.stdout, "API version:", apiVersion(config.EtcdVersion))
	return nil
}

// apiVersion is major.minor of an etcd version.
func apiVersion(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}
