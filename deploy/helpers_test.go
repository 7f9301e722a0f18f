package deploy

import (
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	builtDir  string
	buildErr  error
)

// buildCairn builds cairn, cairnctl and cairnutl from the enclosing module
// once per test run and returns the path of cairn.
func buildCairn(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := mkTemp()
		if err != nil {
			buildErr = err
			return
		}
		builtDir = dir
		cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/cairn", "./cmd/cairnctl", "./cmd/cairnutl")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(builtDir, "cairn")
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }
