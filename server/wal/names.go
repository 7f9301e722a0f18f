package wal

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cairnkv/cairn/pkg/fileutil"
	"go.uber.org/zap"
)

const walSuffix = ".wal"

var errBadWALName = errors.New("wal: bad file name")

// walName names a segment after its sequence number and the raft index of
// the first entry (or snapshot) it may hold.
func walName(seq, index uint64) string {
	return fmt.Sprintf("%016x-%016x%s", seq, index, walSuffix)
}

func parseWALName(name string) (seq, index uint64, err error) {
	if !strings.HasSuffix(name, walSuffix) {
		return 0, 0, errBadWALName
	}
	if _, err := fmt.Sscanf(name, "%016x-%016x.wal", &seq, &index); err != nil {
		return 0, 0, errBadWALName
	}
	if walName(seq, index) != name {
		return 0, 0, errBadWALName
	}
	return seq, index, nil
}

// Exist reports whether dir holds at least one WAL segment.
func Exist(dir string) bool {
	names, err := fileutil.ReadDirNames(dir, walSuffix)
	return err == nil && len(names) != 0
}

// readWALNames returns the well-formed segment names in dir, oldest first.
func readWALNames(lg *zap.Logger, dir string) ([]string, error) {
	all, err := fileutil.ReadDirNames(dir, walSuffix)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range all {
		if _, _, err := parseWALName(n); err != nil {
			lg.Warn("ignored file in WAL directory", zap.String("path", n))
			continue
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil, ErrFileNotFound
	}
	return names, nil
}

// searchIndex returns the position of the last segment whose first index is
// at or below index: the segment that holds index.
func searchIndex(names []string, index uint64) (int, bool) {
	for i := len(names) - 1; i >= 0; i-- {
		_, first, err := parseWALName(names[i])
		if err != nil {
			return -1, false
		}
		if index >= first {
			return i, true
		}
	}
	return -1, false
}

// checkSeq reports a segment missing in the middle of names: their
// sequence numbers must increase by one.
func checkSeq(names []string) error {
	var last uint64
	for i, n := range names {
		seq, _, err := parseWALName(n)
		if err != nil {
			return err
		}
		if i > 0 && seq != last+1 {
			return fmt.Errorf("wal: file sequence numbers (starting from %s) do not increase continuously: %s follows %s",
				names[0], n, names[i-1])
		}
		last = seq
	}
	return nil
}

// selectWALFiles returns the names in dir and the position of the segment
// from which a replay starting at snapIndex must read.
func selectWALFiles(lg *zap.Logger, dir string, snapIndex uint64) ([]string, int, error) {
	names, err := readWALNames(lg, dir)
	if err != nil {
		return nil, -1, err
	}
	i, ok := searchIndex(names, snapIndex)
	if !ok {
		return nil, -1, fmt.Errorf("%w which matches the snapshot index %d", ErrFileNotFound, snapIndex)
	}
	if err := checkSeq(names[i:]); err != nil {
		return nil, -1, err
	}
	return names, i, nil
}
