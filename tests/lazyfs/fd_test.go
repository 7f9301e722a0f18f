package lazyfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// closeOnExec sets the flag on exactly the descriptors open on the path.
func TestCloseOnExec(t *testing.T) {
	dir := t.TempDir()
	target, other := filepath.Join(dir, "target"), filepath.Join(dir, "other")
	open := func(path string) int {
		fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT, 0o600) // no O_CLOEXEC, as go-fuse opens /dev/fuse
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Close(fd) })
		return fd
	}
	cloexec := func(fd int) bool {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			t.Fatal(err)
		}
		return flags&unix.FD_CLOEXEC != 0
	}
	t1, t2, o := open(target), open(target), open(other)
	if cloexec(t1) || cloexec(o) {
		t.Fatal("close-on-exec set before closeOnExec")
	}
	if err := closeOnExec(target); err != nil {
		t.Fatal(err)
	}
	if !cloexec(t1) || !cloexec(t2) {
		t.Error("a descriptor on the target is still inherited")
	}
	if cloexec(o) {
		t.Error("a descriptor on another file was changed")
	}
}

// A process started after the mount does not hold the FUSE connection: a
// test that dies then takes the connection with it instead of leaving its
// members hung on the mount.
func TestChildrenDoNotInheritTheFuseDescriptor(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts")
	}
	_, mnt := mountForTest(t)
	out, err := exec.Command("sh", "-c", "ls -l /proc/self/fd/").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Contains(string(out), fuseDevice) {
		t.Fatalf("the child inherited %s (mount %s):\n%s", fuseDevice, mnt, out)
	}
}

// A mount kept busy by a process (its working directory on the mount, as a
// hung member's would be) is still gone after Unmount, which says it had
// to force it; the process's requests then fail instead of hanging.
func TestUnmountForcesABusyMount(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts")
	}
	f, mnt := mountForTest(t)
	if err := os.Mkdir(filepath.Join(mnt, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("sh", "-c", "read line") // waits on stdin with its cwd on the mount
	holder.Dir = filepath.Join(mnt, "d")
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); holder.Wait() }()

	err = f.Unmount()
	if err == nil || !strings.Contains(err.Error(), "aborted its FUSE connection and detached it") {
		t.Fatalf("Unmount of a busy mount: %v, want it forced", err)
	}
	if mounted(t, mnt) {
		t.Fatalf("%s is still mounted", mnt)
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(holder.Process.Pid), "cwd", "x")); err == nil {
		t.Fatal("a request on the aborted connection succeeded")
	}
}

// mounted reports whether path is a mount point in /proc/self/mounts.
func mounted(t *testing.T, path string) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) > 1 && fields[1] == path {
			return true
		}
	}
	return false
}
