package logrotate

import (
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// backup is one rotated file found next to the log.
type backup struct {
	path string
	at   time.Time
}

// mill applies MaxBackups, then MaxAge, then compresses what is left.
// It runs only on the mill goroutine, and touches only backups, never
// the file being written.
func (w *Writer) mill() error {
	backups, err := w.listBackups()
	if err != nil {
		return err
	}
	keep, drop := w.selectBackups(backups)
	var errs []error
	for _, b := range drop {
		if err := os.Remove(b.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if w.cfg.Compress {
		for _, b := range keep {
			if !strings.HasSuffix(b.path, compressSuffix) {
				if err := compressFile(b.path); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// selectBackups splits backups (newest first) into those kept and those
// removed. A backup and its .gz twin (a compression cut short) count as
// one against MaxBackups.
func (w *Writer) selectBackups(backups []backup) (keep, drop []backup) {
	var cutoff time.Time
	if w.cfg.MaxAge > 0 {
		cutoff = w.cfg.Now().Add(-time.Duration(w.cfg.MaxAge) * day)
	}
	counted := map[string]bool{}
	for _, b := range backups {
		counted[strings.TrimSuffix(b.path, compressSuffix)] = true
		tooMany := w.cfg.MaxBackups > 0 && len(counted) > w.cfg.MaxBackups
		tooOld := !cutoff.IsZero() && b.at.Before(cutoff)
		if tooMany || tooOld {
			drop = append(drop, b)
		} else {
			keep = append(keep, b)
		}
	}
	return keep, drop
}

// listBackups finds the backups of the log, newest first, by their names:
// <prefix>-<timestamp><ext>, optionally gzipped. Other files are ignored.
func (w *Writer) listBackups() ([]backup, error) {
	dir, base := filepath.Split(w.cfg.Filename)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	ext := filepath.Ext(base)
	prefix := base[:len(base)-len(ext)] + "-"
	loc := time.UTC
	if w.cfg.LocalTime {
		loc = time.Local
	}
	var out []backup
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name := strings.TrimSuffix(e.Name(), compressSuffix)
		if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ext) {
			continue
		}
		stamp := name[len(prefix) : len(name)-len(ext)]
		at, err := time.ParseInLocation(backupTimeFormat, stamp, loc)
		if err != nil {
			continue
		}
		out = append(out, backup{path: filepath.Join(dir, e.Name()), at: at})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.After(out[j].at) })
	return out, nil
}

// compressFile replaces src with src.gz. The original goes only once the
// compressed copy is complete, so a crash loses nothing.
func compressFile(src string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	dst := src + compressSuffix
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, info.Mode())
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(dst)
		}
	}()
	gz := gzip.NewWriter(out)
	if _, err = io.Copy(gz, in); err != nil {
		out.Close()
		return err
	}
	if err = gz.Close(); err != nil {
		out.Close()
		return err
	}
	if err = out.Close(); err != nil {
		return err
	}
	return os.Remove(src)
}
