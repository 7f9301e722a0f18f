package deploy

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLicense checks that LICENSE is the whole Apache License 2.0 and
// that the README states the headers policy it relies on.
func TestLicense(t *testing.T) {
	text := string(must(os.ReadFile("../LICENSE")))
	for _, want := range []string{"Apache License\n                           Version 2.0, January 2004",
		"TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION", "9. Accepting Warranty or Additional Liability.",
		"END OF TERMS AND CONDITIONS", "APPENDIX: How to apply the Apache License to your work."} {
		if !strings.Contains(text, want) {
			t.Errorf("LICENSE lacks %q", want)
		}
	}
	if n := len(strings.Fields(text)); n < 1500 {
		t.Errorf("LICENSE has %d words: not the full text", n)
	}
	readme := string(must(os.ReadFile("../README.md")))
	if !strings.Contains(readme, "## License") || !strings.Contains(readme, "Apache License 2.0") {
		t.Error("README has no License section naming the Apache License 2.0")
	}
}

// TestNoForeignLicenseHeaders enforces the README's headers policy: no
// file in the repository carries a copyright notice of its own unless
// NOTICE names the file.
func TestNoForeignLicenseHeaders(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "grep", "-l", "-I", "-i", "-E", "^.{0,4}copyright (\\(c\\)|[0-9]{4})").Output()
	if err != nil && len(out) > 0 {
		t.Fatal(err)
	}
	notice := string(must(os.ReadFile("../NOTICE")))
	for _, file := range strings.Fields(string(out)) {
		if file == "LICENSE" || file == "NOTICE" {
			continue
		}
		if !strings.Contains(notice, file) {
			t.Errorf("%s carries a copyright notice that NOTICE does not list", file)
		}
	}
}
