package logrotate

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairnkv/cairn/pkg/fakeclock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start is the fake clock's first reading; a UTC instant so that backup
// names are predictable.
var start = time.Date(2025, 3, 4, 5, 6, 7, 8_000_000, time.UTC)

// fakeClock is safe for the mill goroutine to read while a test advances it.
type fakeClock = fakeclock.Clock

// newTestWriter returns a Writer whose limit is maxBytes bytes rather
// than megabytes, so that tests rotate with a few short writes.
func newTestWriter(cfg Config, maxBytes int64) *Writer {
	w := New(cfg)
	w.maxBytes = maxBytes
	return w
}

// listDir returns the names in dir, sorted.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustWrite(t *testing.T, w *Writer, s string) {
	t.Helper()
	if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
}

func TestSizeRotation(t *testing.T) {
	tests := []struct {
		name     string
		existing string // content of the log before the writer opens it
		writes   []string
		want     map[string]string // file name -> content after Close; a backup is named for the time of the write that rotated it
	}{
		{
			name:   "fits",
			writes: []string{"aaaa", "bbbb"},
			want:   map[string]string{"app.log": "aaaabbbb"},
		},
		{
			name:   "exactly full does not rotate",
			writes: []string{"aaaaa", "bbbbb"},
			want:   map[string]string{"app.log": "aaaaabbbbb"},
		},
		{
			name:   "one byte over rotates",
			writes: []string{"aaaaa", "bbbbbb"},
			want: map[string]string{
				"app-2025-03-04T05-06-08.008.log": "aaaaa",
				"app.log":                         "bbbbbb",
			},
		},
		{
			name:   "each rotation makes a backup",
			writes: []string{"aaaaaaaa", "bbbbbbbb", "cccccccc"},
			want: map[string]string{
				"app-2025-03-04T05-06-08.008.log": "aaaaaaaa",
				"app-2025-03-04T05-06-09.008.log": "bbbbbbbb",
				"app.log":                         "cccccccc",
			},
		},
		{
			name:     "existing file with room is appended to",
			existing: "old",
			writes:   []string{"new"},
			want:     map[string]string{"app.log": "oldnew"},
		},
		{
			name:     "existing file without room is rotated at open",
			existing: "oldoldold",
			writes:   []string{"new"},
			want: map[string]string{
				"app-2025-03-04T05-06-07.008.log": "oldoldold",
				"app.log":                         "new",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			name := filepath.Join(dir, "app.log")
			if tt.existing != "" {
				if err := os.WriteFile(name, []byte(tt.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			clock := fakeclock.New(start)
			w := newTestWriter(Config{Filename: name, Now: clock.Now}, 10)
			for _, s := range tt.writes {
				mustWrite(t, w, s)
				clock.Advance(time.Second)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, f := range listDir(t, dir) {
				got[f] = readFile(t, filepath.Join(dir, f))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("files = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRetention rotates once a (fake) day and checks which backups survive
// MaxBackups and MaxAge. The clock moves before each rotation, so the last
// mill pass (requested by the last rotation) sees the final time; earlier
// passes remove a subset of what it removes.
func TestRetention(t *testing.T) {
	backupOfDay := func(d int) string {
		return "app-" + start.Add(time.Duration(d)*day).Format(backupTimeFormat) + ".log"
	}
	tests := []struct {
		name       string
		maxBackups int
		maxAge     int
		rotations  int
		want       []string // backups left after Close
	}{
		{"keep all", 0, 0, 4, []string{backupOfDay(1), backupOfDay(2), backupOfDay(3), backupOfDay(4)}},
		{"max backups keeps the newest", 2, 0, 4, []string{backupOfDay(3), backupOfDay(4)}},
		{"max backups larger than count", 9, 0, 3, []string{backupOfDay(1), backupOfDay(2), backupOfDay(3)}},
		// The last pass runs at day 4: the cutoff is day 2, which is kept.
		{"max age drops older than the cutoff", 0, 2, 4, []string{backupOfDay(2), backupOfDay(3), backupOfDay(4)}},
		{"max age one day", 0, 1, 4, []string{backupOfDay(3), backupOfDay(4)}},
		{"both limits apply", 1, 2, 4, []string{backupOfDay(4)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			clock := fakeclock.New(start)
			w := newTestWriter(Config{Filename: filepath.Join(dir, "app.log"), MaxBackups: tt.maxBackups, MaxAge: tt.maxAge, Now: clock.Now}, 10)
			mustWrite(t, w, "first")
			for range tt.rotations {
				clock.Advance(day)
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
			mustWrite(t, w, "last")
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			want := append(append([]string{}, tt.want...), "app.log")
			sort.Strings(want)
			if got := listDir(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("files = %v, want %v", got, want)
			}
			if got := readFile(t, filepath.Join(dir, "app.log")); got != "last" {
				t.Errorf("current log = %q, want %q", got, "last")
			}
		})
	}
}

// TestRetentionAtOpen prunes backups left by an earlier process when the
// file is first opened, and ignores files that only look similar.
func TestRetentionAtOpen(t *testing.T) {
	dir := t.TempDir()
	old := "app-" + start.Add(-10*day).Format(backupTimeFormat) + ".log"
	recent := "app-" + start.Add(-1*day).Format(backupTimeFormat) + ".log"
	oldGz := "app-" + start.Add(-11*day).Format(backupTimeFormat) + ".log.gz"
	unrelated := []string{"app-notatime.log", "other-" + start.Format(backupTimeFormat) + ".log", "app.txt"}
	for _, f := range append([]string{old, recent, oldGz}, unrelated...) {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	clock := fakeclock.New(start)
	w := newTestWriter(Config{Filename: filepath.Join(dir, "app.log"), MaxAge: 7, Now: clock.Now}, 100)
	mustWrite(t, w, "line")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := append([]string{recent, "app.log"}, unrelated...)
	sort.Strings(want)
	if got := listDir(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("files = %v, want %v", got, want)
	}
}

func TestCompress(t *testing.T) {
	dir := t.TempDir()
	clock := fakeclock.New(start)
	w := newTestWriter(Config{Filename: filepath.Join(dir, "app.log"), Compress: true, Now: clock.Now}, 16)
	first := "first line\n"
	mustWrite(t, w, first)
	mustWrite(t, w, "second line\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	gzName := "app-" + start.Format(backupTimeFormat) + ".log.gz"
	if got, want := listDir(t, dir), []string{gzName, "app.log"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("files = %v, want %v", got, want)
	}
	f, err := os.Open(filepath.Join(dir, gzName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != first {
		t.Errorf("decompressed backup = %q, want %q", got, first)
	}
}

func TestBackupNameLocalTime(t *testing.T) {
	zone := time.FixedZone("test", 3*60*60)
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, zone)
	tests := []struct {
		local bool
		want  string
	}{
		{false, "app-2025-03-04T02-06-07.000.log"},
		{true, "app-" + at.Local().Format(backupTimeFormat) + ".log"},
	}
	for _, tt := range tests {
		w := New(Config{Filename: "app.log", LocalTime: tt.local, Now: func() time.Time { return at }})
		if got := backupName("app.log", w.backupTime()); got != tt.want {
			t.Errorf("local=%v: backup name = %q, want %q", tt.local, got, tt.want)
		}
	}
}

func TestRefusedWrites(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		maxSize int
		close   bool
		data    string
		wantErr string
	}{
		{"larger than the limit", 1, false, strings.Repeat("x", megabyte+1), "write length 1048577 exceeds maximum file size 1048576"},
		{"negative limit", -1, false, "x", "write length 1 exceeds maximum file size -1048576"},
		{"after close", 1, true, "x", os.ErrClosed.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := New(Config{Filename: filepath.Join(dir, tt.name+".log"), MaxSize: tt.maxSize})
			if tt.close {
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := w.Write([]byte(tt.data)); n != 0 || err == nil || err.Error() != tt.wantErr {
				t.Errorf("Write = %d, %v; want 0, %q", n, err, tt.wantErr)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("refused writes created files: %v", got)
	}
}

func TestDefaultMaxSize(t *testing.T) {
	if got, want := New(Config{}).maxBytes, int64(100*megabyte); got != want {
		t.Errorf("maxBytes = %d, want %d", got, want)
	}
}

func TestCreatesDirectory(t *testing.T) {
	name := filepath.Join(t.TempDir(), "a", "b", "app.log")
	w := New(Config{Filename: name})
	mustWrite(t, w, "hello")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, name); got != "hello" {
		t.Errorf("log = %q", got)
	}
}

// TestConcurrentWrites checks, under -race, that writers sharing a Writer
// neither lose nor interleave lines across rotations and compression.
func TestConcurrentWrites(t *testing.T) {
	const writers, lines = 8, 200
	dir := t.TempDir()
	clock := fakeclock.New(start)
	w := newTestWriter(Config{Filename: filepath.Join(dir, "app.log"), Compress: true, Now: clock.Now}, 4096)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				if _, err := fmt.Fprintf(w, "writer %d line %04d\n", g, i); err != nil {
					errs <- err
					return
				}
				// Distinct backup names need distinct timestamps.
				clock.Advance(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	files := listDir(t, dir)
	if len(files) < 2 {
		t.Fatalf("no rotation happened: %v", files)
	}
	for _, f := range files {
		for _, line := range strings.Split(strings.TrimSuffix(readLog(t, filepath.Join(dir, f)), "\n"), "\n") {
			if seen[line] {
				t.Fatalf("line %q written twice", line)
			}
			seen[line] = true
		}
	}
	for g := range writers {
		for i := range lines {
			if line := fmt.Sprintf("writer %d line %04d", g, i); !seen[line] {
				t.Fatalf("line %q lost", line)
			}
		}
	}
	if len(seen) != writers*lines {
		t.Errorf("%d distinct lines, want %d", len(seen), writers*lines)
	}
}

// readLog reads a log or a gzipped backup.
func readLog(t *testing.T, path string) string {
	t.Helper()
	if !strings.HasSuffix(path, compressSuffix) {
		return readFile(t, path)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, zr); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return buf.String()
}
