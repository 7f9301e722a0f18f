package diskformat

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSnapshotRestore streams a snapshot over Maintenance.Snapshot from one
// implementation, restores it unmodified with the real etcdutl (hash check
// on) and starts the other implementation on the restored data dir.
func TestSnapshotRestore(t *testing.T) {
	tests := []struct{ from, to kind }{
		{from: cairn, to: etcd},
		{from: etcd, to: cairn},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s_to_%s", tt.from, tt.to), func(t *testing.T) {
			t.Parallel()
			src := newMember(t, workloadFlags...)
			src.start(tt.from)
			cli := src.client()
			compactRev := workload(t, cli, "w/", false)
			want := capture(t, src, cli, compactRev)

			file := filepath.Join(t.TempDir(), "snapshot.db")
			resp, err := cli.SnapshotWithVersion(ctxT(t))
			if err != nil {
				t.Fatalf("%s: snapshot: %v", tt.from, err)
			}
			f, err := os.Create(file)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(f, resp.Snapshot)
			resp.Snapshot.Close()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatalf("%s: reading the snapshot stream: %v", tt.from, err)
			}
			if resp.Version != "3.7.0" {
				t.Errorf("%s: snapshot stream version %q, want etcd v3.7.3's %q", tt.from, resp.Version, "3.7.0")
			}
			cli.Close()
			src.stop(syscall.SIGTERM)

			st := etcdutlJSON(t, "snapshot", "status", file)
			if st["revision"] != float64(want.Rev) {
				t.Errorf("etcdutl snapshot status of %s's %d-byte snapshot: revision %v, want %d (%v)", tt.from, n, st["revision"], want.Rev, st)
			}

			dst := newMember(t, workloadFlags...)
			dst.dataDir = filepath.Join(t.TempDir(), "restored")
			restore := exec.Command(etcdutlBin, "snapshot", "restore", file,
				"--data-dir", dst.dataDir,
				"--name", memberName,
				"--initial-cluster", memberName+"="+advPeerURL,
				"--initial-advertise-peer-urls", advPeerURL,
				"--initial-cluster-token", clusterTok)
			if out, err := restore.CombinedOutput(); err != nil {
				t.Fatalf("etcdutl snapshot restore of %s's snapshot: %v\n%s", tt.from, err, out)
			}
			dst.start(tt.to)
			cli = dst.client()
			got := capture(t, dst, cli, compactRev)
			sameState(t, fmt.Sprintf("%s on a data dir restored from %s's snapshot", tt.to, tt.from), want, got, true)
			writesFurther(t, dst, cli, want.Rev)
		})
	}
}
