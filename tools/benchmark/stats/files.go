package stats

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// WriteReportFiles writes a benchmark's report.json (v, indented) and
// report.md (markdown) to dir, as make bench and make bench-big do.
func WriteReportFiles(dir string, v any, markdown string) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(raw, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(markdown), 0o644)
}
