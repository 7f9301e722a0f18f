package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// cairnBin is the path of the cairn binary built once by TestMain.
var cairnBin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cairn-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	cairnBin = filepath.Join(dir, "cairn")
	// No -race: the server under test is exercised as a black box and a
	// plain build is much faster to compile and to run.
	build := exec.Command("go", "build", "-o", cairnBin, "github.com/cairnkv/cairn/cmd/cairn")
	build.Stdout = os.Stderr
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building cairn failed:", err)
		return 1
	}
	return m.Run()
}
