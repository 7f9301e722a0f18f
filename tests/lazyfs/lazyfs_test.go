package lazyfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func mountForTest(t *testing.T) (*FS, string) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip(err)
	}
	base := t.TempDir()
	mnt, backing, image := filepath.Join(base, "mnt"), filepath.Join(base, "backing"), filepath.Join(base, "image")
	for _, d := range []string{mnt, backing} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Mount(mnt, backing, image)
	if err != nil {
		t.Skipf("cannot mount lazyfs here: %v", err)
	}
	t.Cleanup(func() { f.Unmount() })
	return f, mnt
}

func fsyncPath(t *testing.T, path string) {
	t.Helper()
	d, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatalf("fsync %s: %v", path, err)
	}
}

func writeFile(t *testing.T, path string, data []byte, sync bool) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestPowerCutKeepsOnlyWhatWasSynced: file data survives once the file is
// fsynced, a name once its directory is; nothing else does.
func TestPowerCutKeepsOnlyWhatWasSynced(t *testing.T) {
	lfs, mnt := mountForTest(t)

	durable := writeFile(t, filepath.Join(mnt, "durable"), []byte("synced"), true)
	durable.Write([]byte("+lost")) // after the fsync: volatile
	durable.Close()
	writeFile(t, filepath.Join(mnt, "unsynced-data"), []byte("lost"), false).Close()
	fsyncPath(t, mnt) // the three names above are durable now
	writeFile(t, filepath.Join(mnt, "unsynced-name"), []byte("synced but unnamed"), true).Close()
	if err := os.Rename(filepath.Join(mnt, "unsynced-data"), filepath.Join(mnt, "renamed")); err != nil {
		t.Fatal(err)
	}

	if err := lfs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	read := func(name string) (string, bool) {
		b, err := os.ReadFile(filepath.Join(mnt, name))
		return string(b), err == nil
	}
	if got, ok := read("durable"); !ok || got != "synced" {
		t.Errorf("durable = %q (%v), want the synced part only", got, ok)
	}
	if got, ok := read("unsynced-data"); !ok || got != "" {
		t.Errorf("unsynced-data = %q (%v), want an empty file: its name was synced, its data never", got, ok)
	}
	if _, ok := read("unsynced-name"); ok {
		t.Error("a file whose directory was never fsynced survived")
	}
	if _, ok := read("renamed"); ok {
		t.Error("a rename whose directory was never fsynced survived")
	}

	// What survived is durable: another cut keeps it.
	if err := lfs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	if got, ok := read("durable"); !ok || got != "synced" {
		t.Errorf("after a second cut durable = %q (%v)", got, ok)
	}
}

// TestRenamedDirectoryKeepsSyncedEntries: a directory built under a
// temporary name, fsynced, renamed and its parent fsynced keeps its files
// (how the WAL directory is created).
func TestRenamedDirectoryKeepsSyncedEntries(t *testing.T) {
	lfs, mnt := mountForTest(t)
	tmp := filepath.Join(mnt, "wal.tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tmp, "seg"), []byte("records"), true).Close()
	fsyncPath(t, tmp)
	if err := os.Rename(tmp, filepath.Join(mnt, "wal")); err != nil {
		t.Fatal(err)
	}
	fsyncPath(t, mnt)
	if err := lfs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "wal", "seg")); err != nil || string(b) != "records" {
		t.Fatalf("wal/seg = %q, %v", b, err)
	}
}

// TestInjectedErrors: an injected fault fails the calls it names with its
// errno, makes nothing durable, and healing the disk ends it.
func TestInjectedErrors(t *testing.T) {
	lfs, mnt := mountForTest(t)
	f := writeFile(t, filepath.Join(mnt, "f"), []byte("a"), true)
	defer f.Close()
	fsyncPath(t, mnt)

	lfs.FailSyncs(syscall.EIO)
	if _, err := f.Write([]byte("b")); err != nil {
		t.Fatalf("write with failing syncs: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync = %v, want EIO", err)
	}
	lfs.FailSyncs(0)
	lfs.FailWrites(syscall.EROFS)
	if _, err := f.Write([]byte("c")); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("write on a read-only disk = %v, want EROFS", err)
	}
	if _, err := os.Create(filepath.Join(mnt, "g")); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("create on a read-only disk = %v, want EROFS", err)
	}
	if err := os.Mkdir(filepath.Join(mnt, "d"), 0o700); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("mkdir on a read-only disk = %v, want EROFS", err)
	}
	lfs.FailWrites(0)
	f.Close()
	if err := lfs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil || string(b) != "a" {
		t.Fatalf("after the failed fsync and a power cut f = %q, %v; want only the synced %q", b, err, "a")
	}
}

// TestReusedInodeNumberIsAnotherFile: the backing filesystem gives a
// deleted file's inode number to the next file created. The new file must
// not show the old one's synced blocks after a power cut (a WAL segment
// once did, beyond its last synced record: the soak's replay then found a
// db page where the next record should be), and the old file, whose
// removal was never made durable, must come back with its own content.
func TestReusedInodeNumberIsAnotherFile(t *testing.T) {
	lfs, mnt := mountForTest(t)
	oldDir, newDir := filepath.Join(mnt, "old"), filepath.Join(mnt, "new")
	for _, d := range []string{oldDir, newDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	fsyncPath(t, mnt)
	oldContent := bytes.Repeat([]byte{'x'}, 64<<10)
	oldPath := filepath.Join(oldDir, "f")
	writeFile(t, oldPath, oldContent, true).Close()
	fsyncPath(t, oldDir)
	oldIno := inode(t, oldPath)
	if err := os.Remove(oldPath); err != nil { // not durable: oldDir is not fsynced again
		t.Fatal(err)
	}

	// Create files until one gets the freed number (ext4 hands it out
	// again at once); keep only that one.
	var newPath string
	for i := 0; i < 100 && newPath == ""; i++ {
		p := filepath.Join(newDir, fmt.Sprint("f", i))
		writeFile(t, p, nil, false).Close()
		if inode(t, p) == oldIno {
			newPath = p
			continue
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if newPath == "" {
		t.Fatalf("the backing filesystem never reused inode %d: this test cannot show what it is for", oldIno)
	}
	nf, err := os.OpenFile(newPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := nf.Truncate(int64(len(oldContent))); err != nil { // preallocated, as a WAL segment
		t.Fatal(err)
	}
	if _, err := nf.WriteAt([]byte("record"), 0); err != nil {
		t.Fatal(err)
	}
	if err := nf.Sync(); err != nil {
		t.Fatal(err)
	}
	nf.Close()
	fsyncPath(t, newDir)

	if err := lfs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(newPath)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte("record"), make([]byte, len(oldContent)-len("record"))...)
	if !bytes.Equal(got, want) {
		t.Errorf("the new file holds %d bytes that are not its own (first: %q)", countDiff(got, want), firstDiff(got, want))
	}
	if b, err := os.ReadFile(oldPath); err != nil || !bytes.Equal(b, oldContent) {
		t.Errorf("the old file, removed but not durably: %d bytes, %v; want its %d synced bytes", len(b), err, len(oldContent))
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func countDiff(a, b []byte) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func firstDiff(a, b []byte) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return string(a[i:min(len(a), i+16)])
		}
	}
	return ""
}
