// Package logrotate owns a size-rotated log file: a Writer that appends to
// one file, moves it aside to a timestamped backup when a write would make
// it larger than its limit, and prunes (and optionally gzips) old backups.
// It reproduces the behaviour etcd gets from lumberjack for
// --enable-log-rotation: backups are named
// <name>-2006-01-02T15-04-05.000<ext> next to the file, sizes are in
// megabytes, ages in days. It knows nothing of cairn or of log formats.
package logrotate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cairnkv/cairn/pkg/wait"
)

// DefaultMaxSize is the size limit, in megabytes, when Config.MaxSize is 0.
const DefaultMaxSize = 100

const (
	megabyte = 1024 * 1024
	day      = 24 * time.Hour
	// backupTimeFormat is the timestamp in a backup's name; no colons so
	// that the name is valid on every file system.
	backupTimeFormat = "2006-01-02T15-04-05.000"
	compressSuffix   = ".gz"
)

// Config says where to write and how much to keep.
type Config struct {
	// Filename is the log file. Its directory is created if missing.
	Filename string
	// MaxSize is the largest the file may grow, in megabytes, before it
	// is rotated; 0 means DefaultMaxSize. A negative size rejects every
	// write, as lumberjack does.
	MaxSize int
	// MaxAge removes backups whose timestamp is more than this many days
	// old; 0 keeps them regardless of age.
	MaxAge int
	// MaxBackups is the most backups kept; 0 keeps them all (MaxAge may
	// still remove them).
	MaxBackups int
	// LocalTime names backups in local time rather than UTC.
	LocalTime bool
	// Compress gzips backups (<backup>.gz) after rotation.
	Compress bool
	// Now is the clock for backup names and ages; nil means time.Now.
	Now func() time.Time
}

// Writer is an io.WriteCloser over Config.Filename that rotates it. It is
// safe for concurrent use. The file is opened on the first write (appending
// to an existing file when it has room). Pruning and compression of backups
// run on one background goroutine, started at the first write; Close waits
// for it.
type Writer struct {
	cfg      Config
	maxBytes int64

	mu     sync.Mutex
	file   *os.File
	size   int64
	closed bool

	millReqs chan struct{} // nil until the mill goroutine starts
	millDone sync.WaitGroup
}

// New returns a Writer for cfg. It does not touch the file system.
func New(cfg Config) *Writer {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	size := cfg.MaxSize
	if size == 0 {
		size = DefaultMaxSize
	}
	return &Writer{cfg: cfg, maxBytes: int64(size) * megabyte}
}

// Write appends p to the file, rotating first if p would not fit. A write
// larger than the limit is refused whole: splitting it would cut a log
// entry in two.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, os.ErrClosed
	}
	n := int64(len(p))
	if n > w.maxBytes {
		return 0, fmt.Errorf("write length %d exceeds maximum file size %d", n, w.maxBytes)
	}
	if w.file == nil {
		if err := w.openExistingOrNew(n); err != nil {
			return 0, err
		}
	}
	if w.size+n > w.maxBytes {
		if err := w.rotate(); err != nil {
			return 0, err
		}
	}
	written, err := w.file.Write(p)
	w.size += int64(written)
	return written, err
}

// Sync flushes the current file to stable storage.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == nil {
		return nil
	}
	return w.file.Sync()
}

// Rotate moves the current file aside to a backup and starts a new one,
// whatever its size.
func (w *Writer) Rotate() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return os.ErrClosed
	}
	return w.rotate()
}

// Close closes the file and waits for pending pruning and compression to
// finish. Writes after Close fail with os.ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	var err error
	if w.file != nil {
		err = w.file.Close()
		w.file = nil
	}
	if w.millReqs != nil {
		close(w.millReqs)
	}
	w.mu.Unlock()
	w.millDone.Wait()
	return err
}

// openExistingOrNew opens the file for appending when the next write of n
// bytes fits, and rotates it otherwise. Old backups are pruned here too,
// so a restart applies a tightened retention at once.
func (w *Writer) openExistingOrNew(n int64) error {
	w.requestMill()
	info, err := os.Stat(w.cfg.Filename)
	if errors.Is(err, os.ErrNotExist) {
		return w.openNew()
	}
	if err != nil {
		return fmt.Errorf("error getting log file info: %w", err)
	}
	if info.Size()+n >= w.maxBytes {
		return w.rotate()
	}
	f, err := os.OpenFile(w.cfg.Filename, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		// An unreadable old file should not stop logging: start afresh.
		return w.openNew()
	}
	w.file, w.size = f, info.Size()
	return nil
}

func (w *Writer) rotate() error {
	if w.file != nil {
		if err := w.file.Close(); err != nil {
			return err
		}
		w.file = nil
	}
	if err := w.openNew(); err != nil {
		return err
	}
	w.requestMill()
	return nil
}

// openNew moves an existing file to its backup name and creates an empty
// one with the same permissions (0600 for a first file).
func (w *Writer) openNew() error {
	name := w.cfg.Filename
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("can't make directories for new logfile: %w", err)
	}
	mode := os.FileMode(0o600)
	info, err := os.Stat(name)
	if err == nil {
		mode = info.Mode()
		if err := os.Rename(name, backupName(name, w.backupTime())); err != nil {
			return fmt.Errorf("can't rename log file: %w", err)
		}
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("can't open new logfile: %w", err)
	}
	w.file, w.size = f, 0
	return nil
}

func (w *Writer) backupTime() time.Time {
	t := w.cfg.Now()
	if w.cfg.LocalTime {
		return t.Local()
	}
	return t.UTC()
}

// requestMill asks the mill goroutine for a pass, starting it if needed.
// Requests coalesce: one pending pass sees every backup made before it
// runs. Called with w.mu held.
func (w *Writer) requestMill() {
	if w.cfg.MaxAge == 0 && w.cfg.MaxBackups == 0 && !w.cfg.Compress {
		return
	}
	if w.millReqs == nil {
		w.millReqs = make(chan struct{}, 1)
		w.millDone.Add(1)
		go w.millLoop(w.millReqs)
	}
	wait.Wake(w.millReqs)
}

// millLoop runs until Close closes reqs; a pass requested just before
// Close still runs, so Close leaves the backups as the limits say.
func (w *Writer) millLoop(reqs <-chan struct{}) {
	defer w.millDone.Done()
	for range reqs {
		// Errors have nowhere to go: this is the log. The next pass retries.
		_ = w.mill()
	}
}

// backupName is name with the timestamp t inserted before its extension.
func backupName(name string, t time.Time) string {
	dir, base := filepath.Split(name)
	ext := filepath.Ext(base)
	prefix := base[:len(base)-len(ext)]
	return filepath.Join(dir, prefix+"-"+t.Format(backupTimeFormat)+ext)
}
