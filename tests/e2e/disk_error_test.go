package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/lazyfs"
)

// TestFailingDiskStopsTheMember makes the member's disk fail under it
// (lazyfs): EIO on fsync, EIO on write, a read-only remount. The member
// must acknowledge no write the disk did not take, stop with a clear log
// line (a member that cannot persist must not vote or serve stale state as
// healthy), and once the disk is healthy again restart with every
// acknowledged write, even though what the failed calls wrote is gone (a
// power cut drops it, as a kernel may drop the pages of a failed fsync).
func TestFailingDiskStopsTheMember(t *testing.T) {
	tests := []struct {
		name   string
		inject func(*lazyfs.FS)
		heal   func(*lazyfs.FS)
	}{
		{"EIO on fsync", func(d *lazyfs.FS) { d.FailSyncs(syscall.EIO) }, func(d *lazyfs.FS) { d.FailSyncs(0) }},
		{"EIO on write", func(d *lazyfs.FS) { d.FailWrites(syscall.EIO) }, func(d *lazyfs.FS) { d.FailWrites(0) }},
		{"read-only", func(d *lazyfs.FS) { d.FailWrites(syscall.EROFS) }, func(d *lazyfs.FS) { d.FailWrites(0) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.name != "EIO on fsync" {
				t.Skip("one case in -short mode")
			}
			disk, mnt := powerCutDisk(t)
			m := startMember(t, memberOpts{dataDir: filepath.Join(mnt, "m0.etcd")})
			cli := m.client(t)
			var acked []ackedPut
			put := func(key string) error {
				c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				resp, err := cli.Put(c, key, "v-"+key)
				if err == nil {
					acked = append(acked, ackedPut{key, "v-" + key, resp.Header.Revision})
				}
				return err
			}
			for i := range 50 {
				must(t, put(fmt.Sprintf("disk/before/%03d", i)))
			}
			tc.inject(disk)
			failed := 0
			for i := 0; m.running() && i < 200; i++ {
				if put(fmt.Sprintf("disk/during/%03d", i)) != nil {
					failed++
				}
			}
			deadline := time.Now().Add(30 * time.Second)
			for m.running() && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if m.running() {
				t.Fatalf("the member still runs on a failing disk (%d puts failed)", failed)
			}
			log, err := os.ReadFile(m.logPath)
			must(t, err)
			var why string
			for _, line := range strings.Split(string(log), "\n") {
				if strings.Contains(line, `"level":"error"`) || strings.Contains(line, `"level":"fatal"`) {
					why = line
					break
				}
			}
			if why == "" {
				t.Fatalf("the member stopped without saying why")
			}
			t.Logf("stopped with: %.300s", why)

			tc.heal(disk)
			must(t, disk.PowerCut())
			m.restart()
			verifyAcked(t, m.client(t), "disk", acked)
		})
	}
}
