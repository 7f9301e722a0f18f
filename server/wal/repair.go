package wal

import (
	"io"
	"os"
	"path/filepath"

	"github.com/cairnkv/cairn/pkg/fileutil"
	"github.com/cairnkv/cairn/server/wal/walpb"
	"go.uber.org/zap"
)

// Repair cuts a torn last frame off the last segment in dir, keeping a copy
// of the damaged file as <name>.broken. It reports whether the segment is
// now clean; it refuses (false) when the damage is anything but a torn tail.
// Open+ReadAll already tolerates a torn tail; Repair is for tools and for
// making the cut permanent before a read-only replay.
func Repair(lg *zap.Logger, dir string) bool {
	if lg == nil {
		lg = zap.NewNop()
	}
	names, err := readWALNames(lg, dir)
	if err != nil {
		return false
	}
	path := filepath.Join(dir, names[len(names)-1])
	f, err := fileutil.LockFile(path, os.O_RDWR, fileutil.PrivateFileMode)
	if err != nil {
		lg.Warn("failed to lock WAL file for repair", zap.String("path", path), zap.Error(err))
		return false
	}
	defer f.Close()
	lg.Info("repairing", zap.String("path", path))
	r, err := newSegmentReader(f.File, path)
	if err != nil {
		return false
	}
	d := newDecoder(r)
	var rec walpb.Record
	for {
		err := d.decode(&rec)
		switch {
		case err == nil:
			continue
		case err == io.EOF:
			lg.Info("repaired", zap.String("path", path), zap.Error(io.EOF))
			return true
		case isTornTail(err):
			return truncateTorn(lg, f, path, d.lastValidOff)
		default:
			lg.Warn("failed to repair", zap.String("path", path), zap.Error(err))
			return false
		}
	}
}

// truncateTorn saves a copy of the segment and truncates it at off.
func truncateTorn(lg *zap.Logger, f *fileutil.LockedFile, path string, off int64) bool {
	broken := path + ".broken"
	if err := copyFile(f.File, broken); err != nil {
		lg.Warn("failed to save a copy of the broken WAL file", zap.String("path", broken), zap.Error(err))
		return false
	}
	if err := f.Truncate(off); err != nil {
		lg.Warn("failed to truncate the broken WAL file", zap.String("path", path), zap.Error(err))
		return false
	}
	if err := fileutil.Fsync(f.File); err != nil {
		lg.Warn("failed to fsync the repaired WAL file", zap.String("path", path), zap.Error(err))
		return false
	}
	lg.Info("repaired", zap.String("path", path), zap.Error(io.ErrUnexpectedEOF))
	return true
}

func copyFile(src *os.File, dst string) error {
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err = io.Copy(out, io.NewSectionReader(src, 0, 1<<62)); err == nil {
		err = fileutil.Fsync(out)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
