//go:build !failpoints

package failpoint

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
)

const helperEnv = "FAILPOINT_TEST_OFF_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		Inject("crashHere")
		os.Stdout.WriteString("survived\n")
		return
	}
	os.Exit(m.Run())
}

// Without the tag the environment arms nothing: a process told to crash
// at a point it passes carries on.
func TestEnvIgnoredWithoutTag(t *testing.T) {
	if Enabled {
		t.Fatal("Enabled is true in a build without the failpoints tag")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "GOFAIL_FAILPOINTS=crashHere=panic")
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "survived\n" {
		t.Fatalf("helper: err=%v output %q, want a clean exit printing survived", err, out)
	}
}

type innerHandler struct{}

func (*innerHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, "inner "+r.URL.Path)
}

// Mount adds nothing: the handler is returned as is, so /failpoints is
// whatever the member's handler makes of it.
func TestMountIsIdentity(t *testing.T) {
	inner := &innerHandler{}
	if got := Mount(inner); got != http.Handler(inner) {
		t.Fatalf("Mount returned %T, want the handler itself", got)
	}
	rec := httptest.NewRecorder()
	Mount(inner).ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/failpoints/x", nil))
	if rec.Body.String() != "inner /failpoints/x" {
		t.Errorf("PUT /failpoints/x answered %q", rec.Body.String())
	}
}

// The untagged Inject must cost nothing; compare with the tagged build:
//
//	go test -run ^$ -bench Inject ./pkg/failpoint
//	go test -run ^$ -bench Inject -tags failpoints ./pkg/failpoint
func BenchmarkInject(b *testing.B) {
	for b.Loop() {
		Inject("raftBeforeSave")
	}
}
