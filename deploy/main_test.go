package deploy

import (
	"os"
	"testing"
)

var tempRoot string

func mkTemp() (string, error) { return os.MkdirTemp(tempRoot, "bin") }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cairn-deploy-test")
	if err != nil {
		panic(err)
	}
	tempRoot = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
