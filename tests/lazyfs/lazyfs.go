// Package lazyfs is a FUSE filesystem for tests that can lose power. It
// passes every operation through to a backing directory (which plays the
// page cache) and keeps, beside it, the durable image a disk would hold: a
// file's content reaches the image only when the file is fsynced or
// fdatasynced, and a directory's entries only when the directory is
// fsynced. PowerCut throws away everything not in the image, like the
// LazyFS filesystem that etcd's robustness tests use.
//
// Limits, on purpose: the image is kept at the granularity of the byte
// ranges written (a real disk may also keep some unsynced writes: losing
// all of them is the harshest legal outcome), and metadata other than size
// and names (modes, times, xattrs) is not modelled.
//
// Files and directories are known by an identity lazyfs gives each one
// when it is created, not by the backing inode number: the backing
// filesystem reuses the number of a deleted file for the next one it
// creates, and the deleted file's durable content (its name may still be
// durable) must neither show through in the new file after a power cut
// nor be overwritten by it. A real disk never shows one file's old blocks
// in another.
package lazyfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Available reports why lazyfs cannot mount here, or nil: it needs
// /dev/fuse and root.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("lazyfs needs root to mount")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("lazyfs needs /dev/fuse: %w", err)
	}
	return nil
}

// FS is one mounted lazyfs.
type FS struct {
	mountpoint, backing, image string
	server                     *fuse.Server
	conn                       uint64 // the mount's device number: its FUSE connection

	mu sync.Mutex
	// failWrites, failSyncs: the errno writes (and allocations, truncations,
	// creations of files and directories) and fsyncs fail with; 0 while the
	// disk is healthy.
	failWrites, failSyncs syscall.Errno
	// ids maps each backing inode number to the identity of the file or
	// directory that holds it now; nextID is the next identity to give.
	ids    map[uint64]fileID
	nextID fileID
	// dirty holds, per file, the ranges written since its last fsync; a
	// file present with no ranges had only its size changed.
	dirty map[fileID][]span
	// names is the durable namespace: directory (by identity, so that a
	// renamed directory keeps its entries) to its entries as of its last
	// fsync.
	names  map[fileID]map[string]entry
	rootID fileID
}

// fileID is lazyfs's identity of a file or directory (see the package
// comment).
type fileID uint64

type span struct{ from, to int64 }

type entry struct {
	id    fileID
	isDir bool
}

// Mount serves backing at mountpoint. image is an empty directory outside
// both where the durable content is kept. Everything already in backing
// counts as durable.
func Mount(mountpoint, backing, image string) (*FS, error) {
	f := &FS{mountpoint: mountpoint, backing: backing, image: image}
	if err := f.takeImage(); err != nil {
		return nil, err
	}
	if err := f.mount(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *FS) mount() error {
	var st syscall.Stat_t
	if err := syscall.Stat(f.backing, &st); err != nil {
		return err
	}
	root := &gofs.LoopbackRoot{Path: f.backing, Dev: uint64(st.Dev)}
	root.NewNode = func(r *gofs.LoopbackRoot, _ *gofs.Inode, _ string, _ *syscall.Stat_t) gofs.InodeEmbedder {
		return &node{LoopbackNode: gofs.LoopbackNode{RootData: r}, lfs: f}
	}
	rootNode := root.NewNode(root, nil, "", &st)
	root.RootNode = rootNode
	opts := &gofs.Options{
		// Strict: no fallback to the fusermount helper, which would fork
		// while newServer holds syscall.ForkLock.
		MountOptions: fuse.MountOptions{FsName: "lazyfs", Name: "lazyfs", DirectMountStrict: true},
	}
	srv, err := newServer(f.mountpoint, gofs.NewNodeFS(rootNode, opts), &opts.MountOptions)
	if err != nil {
		return fmt.Errorf("lazyfs: mount %s: %w", f.mountpoint, err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		return fmt.Errorf("lazyfs: mount %s: %w", f.mountpoint, err)
	}
	var mst syscall.Stat_t
	if err := syscall.Stat(f.mountpoint, &mst); err != nil {
		srv.Unmount()
		return fmt.Errorf("lazyfs: mount %s: %w", f.mountpoint, err)
	}
	f.server, f.conn = srv, mst.Dev
	return nil
}

// newServer mounts and returns the server, with its /dev/fuse descriptor
// close-on-exec. go-fuse's direct mount opens /dev/fuse without O_CLOEXEC,
// so every member started afterwards inherited the descriptor: a test
// process that died then left the connection open in its members, which
// hung in D state on the mount forever. Holding syscall.ForkLock keeps
// any fork out until the flag is set.
func newServer(mountpoint string, rawFS fuse.RawFileSystem, opts *fuse.MountOptions) (*fuse.Server, error) {
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	srv, err := fuse.NewServer(rawFS, mountpoint, opts)
	if err != nil {
		return nil, err
	}
	if err := closeOnExec(fuseDevice); err != nil {
		return nil, errors.Join(err, srv.Unmount())
	}
	return srv, nil
}

// fuseDevice is the device the FUSE connections are opened on.
const fuseDevice = "/dev/fuse"

// closeOnExec sets FD_CLOEXEC on each of the process's descriptors open
// on path.
func closeOnExec(path string) error {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err != nil || target != path {
			continue // closed since the listing, or another file
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
			return fmt.Errorf("lazyfs: close-on-exec on fd %d (%s): %w", fd, path, err)
		}
	}
	return nil
}

// Unmount unmounts the filesystem; the backing keeps everything written.
// When the mount stays busy (a process still has a file open on it, or
// hangs in a request), it aborts the FUSE connection, so that every
// request fails with ENOTCONN, and detaches the mount, then reports that
// it had to.
func (f *FS) Unmount() error {
	if f.server == nil {
		return nil
	}
	srv := f.server
	err := srv.Unmount()
	if err == nil {
		f.server = nil
		return nil
	}
	ferr := forceUnmount(f.mountpoint, f.conn)
	// With the connection aborted the serve loops see ENODEV and exit.
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(forcedExitWait):
		ferr = errors.Join(ferr, fmt.Errorf("serve loop still running %v after the abort", forcedExitWait))
	}
	f.server = nil
	if ferr != nil {
		return fmt.Errorf("lazyfs: unmount %s: %v; forcing it failed: %w", f.mountpoint, err, ferr)
	}
	return fmt.Errorf("lazyfs: unmount %s: %v; aborted its FUSE connection and detached it", f.mountpoint, err)
}

// forcedExitWait bounds how long Unmount waits for the serve loop after
// aborting the connection: cleanup must end even if the kernel keeps it.
const forcedExitWait = 10 * time.Second

// fuseControl is where the kernel's fusectl filesystem lists the FUSE
// connections, each by its device number.
const fuseControl = "/sys/fs/fuse/connections"

// forceUnmount aborts the FUSE connection conn (the mount's device
// number) and lazily unmounts mountpoint, the last resort for a mount
// whose users hang: either alone can leave them waiting.
func forceUnmount(mountpoint string, conn uint64) error {
	abortErr := abortConnection(conn)
	detachErr := syscall.Unmount(mountpoint, syscall.MNT_DETACH)
	if errors.Is(detachErr, syscall.EINVAL) {
		detachErr = nil // already not a mount point
	}
	return errors.Join(abortErr, detachErr)
}

// abortConnection writes to the connection's abort file, mounting fusectl
// first where nobody did.
func abortConnection(conn uint64) error {
	abort := filepath.Join(fuseControl, strconv.FormatUint(conn, 10), "abort")
	if _, err := os.Stat(abort); errors.Is(err, fs.ErrNotExist) {
		if err := syscall.Mount("fusectl", fuseControl, "fusectl", 0, ""); err != nil && !errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("mount fusectl on %s: %w", fuseControl, err)
		}
	}
	if err := os.WriteFile(abort, []byte("1"), 0); err != nil {
		return fmt.Errorf("abort FUSE connection %d: %w", conn, err)
	}
	return nil
}

// PowerCut loses power: it unmounts, puts back in the backing directory
// only what the durable image holds, and mounts again. No process may
// have a file open on the mount (kill them first).
func (f *FS) PowerCut() error {
	if err := f.Unmount(); err != nil {
		return err
	}
	if err := f.restoreImage(); err != nil {
		return err
	}
	if err := f.takeImage(); err != nil {
		return err
	}
	return f.mount()
}

// FailWrites makes every later write, allocation, truncation, file and
// directory creation fail with errno (syscall.EROFS for a disk remounted
// read-only, syscall.EIO for a failing one); 0 heals the disk.
func (f *FS) FailWrites(errno syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failWrites = errno
}

// FailSyncs makes every later fsync and fdatasync fail with errno, having
// made nothing durable; 0 heals the disk.
func (f *FS) FailSyncs(errno syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failSyncs = errno
}

func (f *FS) writeFault() syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failWrites
}

func (f *FS) syncFault() syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failSyncs
}

func (f *FS) imagePath(id fileID) string { return filepath.Join(f.image, fmt.Sprint(id)) }

// idOf returns the identity of the file at backing inode ino, giving one
// to an inode seen for the first time.
func (f *FS) idOf(ino uint64) fileID {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.idOfLocked(ino)
}

func (f *FS) idOfLocked(ino uint64) fileID {
	if id, ok := f.ids[ino]; ok {
		return id
	}
	return f.newIDLocked(ino)
}

// created gives the file or directory just created at ino a new identity:
// whatever an earlier holder of the inode number made durable stays its own.
func (f *FS) created(ino uint64) fileID {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.newIDLocked(ino)
}

func (f *FS) newIDLocked(ino uint64) fileID {
	f.nextID++
	f.ids[ino] = f.nextID
	return f.nextID
}

// takeImage makes everything in the backing directory durable.
func (f *FS) takeImage() error {
	if err := os.RemoveAll(f.image); err != nil {
		return err
	}
	if err := os.MkdirAll(f.image, 0o700); err != nil {
		return err
	}
	f.ids = map[uint64]fileID{}
	f.dirty = map[fileID][]span{}
	f.names = map[fileID]map[string]entry{}
	return filepath.WalkDir(f.backing, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		id := f.idOf(info.Sys().(*syscall.Stat_t).Ino)
		if !d.IsDir() {
			return copyFile(path, f.imagePath(id))
		}
		if path == f.backing {
			f.rootID = id
		}
		ents, err := f.listDir(path)
		f.names[id] = ents
		return err
	})
}

// restoreImage replaces the backing directory's content by the image.
func (f *FS) restoreImage() error {
	ents, err := os.ReadDir(f.backing)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(f.backing, e.Name())); err != nil {
			return err
		}
	}
	return f.restoreDir(f.backing, f.rootID)
}

// restoreDir recreates in dir the durable entries of directory id.
func (f *FS) restoreDir(dir string, id fileID) error {
	ents := f.names[id]
	names := make([]string, 0, len(ents))
	for n := range ents {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := ents[n]
		path := filepath.Join(dir, n)
		if e.isDir {
			if err := os.Mkdir(path, 0o700); err != nil {
				return err
			}
			if err := f.restoreDir(path, e.id); err != nil {
				return err
			}
			continue
		}
		src := f.imagePath(e.id)
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			// Named durably, content never synced: an empty file.
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				return err
			}
			continue
		}
		if err := copyFile(src, path); err != nil {
			return err
		}
	}
	return nil
}

// listDir lists the entries of the backing directory at path with their
// identities.
func (f *FS) listDir(path string) (map[string]entry, error) {
	des, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]entry, len(des))
	for _, d := range des {
		info, err := d.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out[d.Name()] = entry{id: f.idOf(info.Sys().(*syscall.Stat_t).Ino), isDir: d.IsDir()}
	}
	return out, nil
}

// noteWrite records that [off, off+n) of file id changed.
func (f *FS) noteWrite(id fileID, off, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	spans := f.dirty[id]
	if k := len(spans); k > 0 && off <= spans[k-1].to && off+n >= spans[k-1].from {
		spans[k-1] = span{min(off, spans[k-1].from), max(off+n, spans[k-1].to)}
	} else {
		spans = append(spans, span{off, off + n})
	}
	f.dirty[id] = spans
}

// noteResize records that file id's size changed.
func (f *FS) noteResize(id fileID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.dirty[id]; !ok {
		f.dirty[id] = nil
	}
}

// syncFile makes what file id holds now durable: the ranges written since
// its last sync and its size. fd reads the backing file.
func (f *FS) syncFile(id fileID, fd int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	spans, ok := f.dirty[id]
	if !ok {
		return nil
	}
	img, err := os.OpenFile(f.imagePath(id), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer img.Close()
	// The handle may be write-only: read through a new descriptor.
	src, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return err
	}
	defer src.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(src.Fd()), &st); err != nil {
		return err
	}
	for _, s := range spans {
		to := min(s.to, st.Size)
		if to <= s.from {
			continue
		}
		buf := make([]byte, to-s.from)
		if _, err := src.ReadAt(buf, s.from); err != nil {
			return err
		}
		if _, err := img.WriteAt(buf, s.from); err != nil {
			return err
		}
	}
	if err := img.Truncate(st.Size); err != nil {
		return err
	}
	delete(f.dirty, id)
	return nil
}

// syncDir makes the entries of the directory at rel durable as they are now.
func (f *FS) syncDir(rel string) error {
	path := filepath.Join(f.backing, rel)
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return err
	}
	ents, err := f.listDir(path)
	if err != nil {
		return err
	}
	id := f.idOf(st.Ino)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names[id] = ents
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// node is a loopback node whose files and directories report to the FS.
type node struct {
	gofs.LoopbackNode
	lfs *FS
}

func (n *node) relPath() string { return n.Path(n.Root()) }

func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return n.wrap(fh, n.lfs.idOf(n.StableAttr().Ino), flags), fl, 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	if errno := n.lfs.writeFault(); errno != 0 {
		return nil, nil, 0, errno
	}
	in, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return in, n.wrap(fh, n.lfs.created(in.StableAttr().Ino), flags|syscall.O_TRUNC), fl, 0
}

// Mkdir gives the new directory its own identity (see the package comment).
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if errno := n.lfs.writeFault(); errno != 0 {
		return nil, errno
	}
	in, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno == 0 {
		n.lfs.created(in.StableAttr().Ino)
	}
	return in, errno
}

func (n *node) wrap(fh gofs.FileHandle, id fileID, flags uint32) gofs.FileHandle {
	lf, ok := fh.(*gofs.LoopbackFile)
	if !ok {
		return fh
	}
	if flags&syscall.O_TRUNC != 0 {
		n.lfs.noteResize(id)
	}
	return &file{LoopbackFile: lf, lfs: n.lfs, id: id}
}

func (n *node) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if _, ok := in.GetSize(); ok {
		if errno := n.lfs.writeFault(); errno != 0 {
			return errno
		}
		n.lfs.noteResize(n.lfs.idOf(n.StableAttr().Ino))
	}
	return n.LoopbackNode.Setattr(ctx, fh, in, out)
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &dir{inner: fh, lfs: n.lfs, rel: n.relPath()}, fl, 0
}

// file tracks the writes of one open file. Passthrough is off: every write
// must come through here.
type file struct {
	*gofs.LoopbackFile
	lfs *FS
	id  fileID
}

func (f *file) PassthroughFd() (int, bool) { return 0, false }

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := f.lfs.writeFault(); errno != 0 {
		return 0, errno
	}
	f.lfs.noteWrite(f.id, off, int64(len(data)))
	return f.LoopbackFile.Write(ctx, data, off)
}

func (f *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	if errno := f.lfs.writeFault(); errno != 0 {
		return 0, errno
	}
	var n int64
	for _, d := range data {
		n += int64(len(d))
	}
	f.lfs.noteWrite(f.id, off, n)
	return f.LoopbackFile.Writev(ctx, data, off)
}

func (f *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if errno := f.lfs.writeFault(); errno != 0 {
		return errno
	}
	f.lfs.noteResize(f.id)
	return f.LoopbackFile.Allocate(ctx, off, size, mode)
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if _, ok := in.GetSize(); ok {
		if errno := f.lfs.writeFault(); errno != 0 {
			return errno
		}
		f.lfs.noteResize(f.id)
	}
	return f.LoopbackFile.Setattr(ctx, in, out)
}

// Fsync makes the file durable in the image. The backing file is not
// fsynced: it only plays the page cache.
func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if errno := f.lfs.syncFault(); errno != 0 {
		return errno
	}
	fd, _ := f.LoopbackFile.PassthroughFd()
	return gofs.ToErrno(f.lfs.syncFile(f.id, fd))
}

// dir is an open directory; its fsync makes its entries durable.
type dir struct {
	inner gofs.FileHandle
	lfs   *FS
	rel   string
}

func (d *dir) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	return d.inner.(gofs.FileReaddirenter).Readdirent(ctx)
}

func (d *dir) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	return d.inner.(gofs.FileSeekdirer).Seekdir(ctx, off)
}

func (d *dir) Releasedir(ctx context.Context, flags uint32) {
	d.inner.(gofs.FileReleasedirer).Releasedir(ctx, flags)
}

func (d *dir) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	if errno := d.lfs.syncFault(); errno != 0 {
		return errno
	}
	return gofs.ToErrno(d.lfs.syncDir(d.rel))
}
