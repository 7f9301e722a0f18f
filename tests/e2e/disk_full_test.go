package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// smallDisk mounts a tmpfs of sizeMB under a temporary dir and returns it;
// it skips the test where mounting is not allowed (not root, no tmpfs).
func smallDisk(t *testing.T, sizeMB int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small disk needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dM", sizeMB), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

func resizeDisk(t *testing.T, dir string, sizeMB int) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", fmt.Sprintf("remount,size=%dM", sizeMB), dir).CombinedOutput(); err != nil {
		t.Fatalf("resize %s: %v: %s", dir, err, out)
	}
}

// TestDiskFullStopsTheMemberAndLosesNothing fills the member's disk under
// a write load. The member must stop (it cannot make writes durable, and a
// member that cannot persist must not vote or acknowledge), say why in its
// log, and once the disk has room again restart with every acknowledged
// write.
func TestDiskFullStopsTheMemberAndLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a disk: not in -short mode")
	}
	disk := smallDisk(t, 100) // the WAL preallocates 64 MB of it
	m := startMember(t, memberOpts{dataDir: filepath.Join(disk, "m0.etcd")})
	cli := m.client(t)
	value := strings.Repeat("x", 256<<10)
	acked := map[string]bool{}
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; m.running() && time.Now().Before(deadline); i++ {
		key := fmt.Sprintf("full/%04d", i)
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := cli.Put(c, key, value)
		cancel()
		if err == nil {
			acked[key] = true
		}
	}
	if m.running() {
		t.Fatalf("the member still runs after %d acknowledged 256 KiB puts on a 100 MB disk", len(acked))
	}
	log, err := os.ReadFile(m.logPath)
	must(t, err)
	var full []string
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "no space left on device") {
			full = append(full, line)
		}
	}
	if len(full) == 0 {
		t.Fatalf("the member's log does not say the disk is full")
	}
	t.Logf("the member stopped with: %.400s", full[len(full)-1])
	t.Logf("%d puts acknowledged before the disk filled", len(acked))

	resizeDisk(t, disk, 400)
	m.restart()
	cli = m.client(t)
	resp, err := cli.Get(ctx(t), "full/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	must(t, err)
	stored := map[string]bool{}
	for _, kv := range resp.Kvs {
		stored[string(kv.Key)] = true
	}
	for k := range acked {
		if !stored[k] {
			t.Errorf("acknowledged put of %s lost", k)
		}
	}
	mustPut(t, cli, "after-full", "v")
}
