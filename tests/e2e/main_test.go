package e2e

import (
	"os"
	"testing"

	"github.com/cairnkv/cairn/tests/harness"
)

// cairnBin is the path of the cairn binary built once by TestMain.
var cairnBin string

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, harness.Builds(map[string]*string{"cairn": &cairnBin})))
}
