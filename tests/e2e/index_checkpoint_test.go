package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestIndexCheckpointRestart: a clean stop writes the key index checkpoint
// and the next start loads it, with the same data, HashKV and lease
// attachments as before; after a SIGKILL there is none and the index is
// rebuilt; with --experimental-index-checkpoint=false none is written.
func TestIndexCheckpointRestart(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 1})
	c.waitLeader(0)
	cli, m := c.clients[0], c.members[0]
	ckpt := filepath.Join(m.dataDir, "member", "index.ckpt")
	lease, err := cli.Grant(ctx(t), 600)
	must(t, err)
	for i := range 300 {
		key := fmt.Sprintf("ckpt/%03d", i)
		if i%10 == 0 {
			_, err = cli.Put(ctx(t), key, "leased", clientv3.WithLease(lease.ID))
		} else {
			_, err = cli.Put(ctx(t), key, fmt.Sprint(i))
		}
		must(t, err)
	}
	for i := range 30 {
		_, err := cli.Delete(ctx(t), fmt.Sprintf("ckpt/%03d", i*7))
		must(t, err)
	}
	_, err = cli.Compact(ctx(t), currentRev(t, cli)-100, clientv3.WithCompactPhysical())
	must(t, err)
	before := hashKV(t, c)

	if _, err := c.sigterm(0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logSince(t, m), "wrote the key index checkpoint") {
		t.Fatal("clean stop logged no checkpoint")
	}
	if _, err := os.Stat(ckpt); err != nil {
		t.Fatalf("no checkpoint after a clean stop: %v", err)
	}
	c.restartMembers(t, 0)
	if !strings.Contains(logSince(t, m), "loaded the key index from its checkpoint") {
		t.Fatal("restart did not load the checkpoint")
	}
	if _, err := os.Stat(ckpt); !os.IsNotExist(err) {
		t.Fatalf("checkpoint kept after loading it: %v", err)
	}
	if after := hashKV(t, c); after != before {
		t.Fatalf("HashKV %+v after loading the checkpoint, %+v before", after, before)
	}
	// The leased keys were re-attached: revoking deletes them.
	_, err = cli.Revoke(ctx(t), lease.ID)
	must(t, err)
	resp, err := cli.Get(ctx(t), "ckpt/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	must(t, err)
	// Left: the keys neither deleted (i = 0, 7, ..., 203) nor leased (i%10 == 0).
	want := int64(0)
	for i := range 300 {
		if !(i%7 == 0 && i <= 29*7) && i%10 != 0 {
			want++
		}
	}
	if resp.Count != want {
		t.Fatalf("%d keys after revoking the lease, want %d", resp.Count, want)
	}

	c.members[0].kill()
	c.restartMembers(t, 0)
	if strings.Contains(logSince(t, m), "loaded the key index from its checkpoint") {
		t.Fatal("loaded a checkpoint after SIGKILL")
	}

	// Switched off: the checkpoint of the last stop is neither loaded nor
	// kept, and no new one is written.
	if _, err := c.sigterm(0); err != nil {
		t.Fatal(err)
	}
	m.args = append(m.args, "--experimental-index-checkpoint=false")
	c.restartMembers(t, 0)
	if strings.Contains(logSince(t, m), "loaded the key index from its checkpoint") {
		t.Fatal("loaded a checkpoint with the option off")
	}
	if _, err := c.sigterm(0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ckpt); !os.IsNotExist(err) {
		t.Fatalf("checkpoint written with the option off: %v", err)
	}
}

func hashKV(t *testing.T, c *cluster) string {
	t.Helper()
	resp, err := c.clients[0].HashKV(ctx(t), c.members[0].clientURL, 0)
	must(t, err)
	return fmt.Sprintf("hash %d at %d, compacted %d", resp.Hash, resp.Header.Revision, resp.CompactRevision)
}
