package utl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cairnkv/cairn/pkg/bytesize"
)

// HashKV is the result of `hashkv`, with etcdutl's JSON names.
type HashKV struct {
	Hash            uint32 `json:"hash"`
	HashRevision    int64  `json:"hashRevision"`
	CompactRevision int64  `json:"compactRevision"`
}

// Output formats of -w/--write-out.
var writeOutFormats = map[string]bool{"simple": true, "json": true, "table": true, "fields": true, "protobuf": true}

// errUnsupportedFormat is etcdutl's error for an unknown -w value.
var errUnsupportedFormat = errors.New("unsupported output format")

// checkFormat validates a -w value; its error exits with ExitBadFeature.
func checkFormat(format string) error {
	if !writeOutFormats[format] {
		return errUnsupportedFormat
	}
	return nil
}

// report is one result in the shapes etcdutl prints: a table (header and a
// row), a JSON value and "Name" : value field lines.
type report struct {
	header []string
	row    []string
	json   any
	fields [][2]any
}

func statusReport(s Status) report {
	return report{
		header: []string{"hash", "revision", "total keys", "total size", "version"},
		row:    []string{fmt.Sprintf("%x", s.Hash), fmt.Sprint(s.Revision), fmt.Sprint(s.TotalKey), bytesize.SI(uint64(s.TotalSize)), s.Version},
		json:   s,
		fields: [][2]any{{"Hash", s.Hash}, {"Revision", s.Revision}, {"Keys", s.TotalKey}, {"Size", s.TotalSize}, {"Version", s.Version}},
	}
}

func hashKVReport(h HashKV) report {
	return report{
		header: []string{"hash", "hash revision", "compact revision"},
		row:    []string{fmt.Sprint(h.Hash), fmt.Sprint(h.HashRevision), fmt.Sprint(h.CompactRevision)},
		json:   h,
		fields: [][2]any{{"Hash", h.Hash}, {"Hash revision", h.HashRevision}, {"Compact revision", h.CompactRevision}},
	}
}

// printReport writes r in format to w. protobuf is accepted by -w but, as in
// etcdutl, supported by no command.
func printReport(w io.Writer, format string, r report) error {
	switch format {
	case "simple":
		fmt.Fprintln(w, strings.Join(r.row, ", "))
	case "json":
		b, err := json.Marshal(r.json)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, string(b))
	case "fields":
		for _, f := range r.fields {
			fmt.Fprintln(w, `"`+f[0].(string)+`" :`, f[1])
		}
	case "table":
		writeTable(w, r.header, r.row)
	default:
		return &exitError{code: exitBadFeature, err: errors.New(format + " not supported as output format")}
	}
	return nil
}
