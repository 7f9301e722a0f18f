package etcdtools

import (
	"os/exec"
	"strings"
	"testing"
)

func TestBuildsEtcdctlOfTheRightVersion(t *testing.T) {
	p, err := Path("etcdctl")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(p, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "etcdctl version: 3.7.3") {
		t.Fatalf("unexpected version output:\n%s", out)
	}
}
