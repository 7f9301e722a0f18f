// Package modules checks the Go module layout of the repository: the
// library modules stay free of the server's dependencies, every module
// requires its siblings at the one release version, the modules agree on
// the versions of what they share, and scripts/set-version.sh updates all
// of that and names the tags to push.
package modules

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/server/config"
)

const prefix = "github.com/cairnkv/cairn"

// outsideWorkspace are the modules go.work leaves out on purpose: their
// heavy dependencies (Kubernetes and Prometheus' server for deploy,
// protocompile for protogen) would raise shared dependency versions for
// every module in a workspace build. They are not released.
var outsideWorkspace = []string{"deploy", "tools/protogen"}

// repoRoot is the repository's top directory (this package is tests/modules).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("no go.work at the repository root %s: %v", root, err)
	}
	return root
}

// goCmd runs the go command in dir outside the workspace (GOWORK=off):
// each module as someone who depends on it sees it.
func goCmd(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return out
}

// workspaceModules are the directories go.work uses, relative to the root
// ("." for the root module).
func workspaceModules(t *testing.T, root string) []string {
	t.Helper()
	var work struct{ Use []struct{ DiskPath string } }
	if err := json.Unmarshal(goCmd(t, root, "work", "edit", "-json", "go.work"), &work); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, u := range work.Use {
		dirs = append(dirs, filepath.Clean(u.DiskPath))
	}
	return dirs
}

// goModFile is the part of `go mod edit -json` the checks read.
type goModFile struct {
	Module  struct{ Path string }
	Require []struct {
		Path     string
		Version  string
		Indirect bool
	}
	Replace []struct {
		Old struct{ Path string }
		New struct{ Path string }
	}
}

func readGoMod(t *testing.T, path string) goModFile {
	t.Helper()
	var f goModFile
	if err := json.Unmarshal(goCmd(t, filepath.Dir(path), "mod", "edit", "-json", path), &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// allGoMods lists every go.mod of the repository (testdata excluded).
func allGoMods(t *testing.T, root string) []string {
	t.Helper()
	var mods []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" {
			mods = append(mods, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return mods
}

// TestLibraryModulesStayLean: an application that imports the client (or
// the API definitions, the helpers or the CLI library) must not download
// the storage engine, raft, Prometheus or cairn's server, neither as a
// package its build compiles (tests included) nor as a module in its graph.
func TestLibraryModulesStayLean(t *testing.T) {
	forbidden := []string{
		"go.etcd.io/bbolt",
		"go.etcd.io/raft",
		"github.com/prometheus",
		prefix + "/server",
		prefix + "/utl",
		prefix + "/tests",
	}
	reaches := func(p string) string {
		for _, f := range forbidden {
			if p == f || strings.HasPrefix(p, f+"/") {
				return f
			}
		}
		return ""
	}
	root := repoRoot(t)
	for _, mod := range []string{"api", "pkg", "client", "ctl"} {
		t.Run(mod, func(t *testing.T) {
			dir := filepath.Join(root, mod)
			for _, pkg := range strings.Fields(string(goCmd(t, dir, "list", "-deps", "-test", "./..."))) {
				if f := reaches(pkg); f != "" {
					t.Errorf("the %s module's packages (with tests) import %s (forbidden: %s)", mod, pkg, f)
				}
			}
			sc := bufio.NewScanner(bytes.NewReader(goCmd(t, dir, "mod", "graph")))
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				if len(fields) != 2 {
					continue
				}
				dep, _, _ := strings.Cut(fields[1], "@")
				if f := reaches(dep); f != "" {
					t.Errorf("the %s module's graph reaches %s through %s (forbidden: %s)", mod, fields[1], fields[0], f)
				}
			}
		})
	}
}

// TestForbiddenMatcherCatchesTheServer keeps the lean check from passing
// vacuously: the server module's own dependencies are exactly what the
// check forbids.
func TestForbiddenMatcherCatchesTheServer(t *testing.T) {
	root := repoRoot(t)
	deps := strings.Fields(string(goCmd(t, filepath.Join(root, "server"), "list", "-deps", "./...")))
	for _, want := range []string{"go.etcd.io/bbolt", "go.etcd.io/raft/v3", prefix + "/server/etcdserver"} {
		if !slices.Contains(deps, want) {
			t.Errorf("server module's deps lack %s: the lean check's list is stale", want)
		}
	}
}

// TestWorkspaceCoversTheModules: every module of the repository is in
// go.work or deliberately outside it, and every workspace module exists.
func TestWorkspaceCoversTheModules(t *testing.T) {
	root := repoRoot(t)
	used := workspaceModules(t, root)
	for _, dir := range used {
		if _, err := os.Stat(filepath.Join(root, dir, "go.mod")); err != nil {
			t.Errorf("go.work uses %s, which has no go.mod", dir)
		}
	}
	for _, gomod := range allGoMods(t, root) {
		dir, err := filepath.Rel(root, filepath.Dir(gomod))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(used, dir) && !slices.Contains(outsideWorkspace, dir) {
			t.Errorf("module %s is neither in go.work nor listed as outside it", dir)
		}
		want := prefix
		if dir != "." {
			want = prefix + "/" + filepath.ToSlash(dir)
		}
		if got := readGoMod(t, gomod).Module.Path; got != want {
			t.Errorf("%s declares module %s, want %s (the import path of its directory)", gomod, got, want)
		}
	}
}

// TestOneVersionAcrossModules: every requirement of a cairn module, in
// every go.mod, is the release version the binaries report, and points at
// the sibling directory through a replace directive, so that a checkout
// builds without the tags.
func TestOneVersionAcrossModules(t *testing.T) {
	root := repoRoot(t)
	want := "v" + config.CairnVersion
	for _, gomod := range allGoMods(t, root) {
		f := readGoMod(t, gomod)
		replaced := map[string]string{}
		for _, r := range f.Replace {
			replaced[r.Old.Path] = r.New.Path
		}
		rel, _ := filepath.Rel(root, gomod)
		for _, r := range f.Require {
			if r.Path != prefix && !strings.HasPrefix(r.Path, prefix+"/") {
				continue
			}
			if r.Version != want {
				t.Errorf("%s requires %s %s, want %s (config.CairnVersion)", rel, r.Path, r.Version, want)
			}
			target, ok := replaced[r.Path]
			if !ok {
				t.Errorf("%s requires %s without a replace directive", rel, r.Path)
				continue
			}
			dir := strings.TrimPrefix(strings.TrimPrefix(r.Path, prefix), "/")
			if got, wantDir := filepath.Clean(filepath.Join(filepath.Dir(gomod), target)), filepath.Join(root, dir); got != wantDir {
				t.Errorf("%s replaces %s with %s, want the directory %s", rel, r.Path, target, wantDir)
			}
		}
	}
}

// TestSharedDependenciesAgree: each workspace module, built on its own,
// compiles the same version of every module it shares with the workspace
// build (tests included), so that what CI tests is what a user of one
// module gets.
func TestSharedDependenciesAgree(t *testing.T) {
	root := repoRoot(t)
	versions := func(dir string, workspace bool, pattern string) map[string]string {
		cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", pattern)
		cmd.Dir = dir
		cmd.Env = os.Environ()
		if !workspace {
			cmd.Env = append(cmd.Env, "GOWORK=off")
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps in %s: %v\n%s", dir, err, stderr.Bytes())
		}
		m := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if path, v, ok := strings.Cut(line, " "); ok && v != "" {
				m[path] = v
			}
		}
		return m
	}
	ws := versions(root, true, "work")
	if len(ws) == 0 {
		t.Fatal("the workspace build uses no versioned module: the check would pass vacuously")
	}
	for _, dir := range workspaceModules(t, root) {
		for path, v := range versions(filepath.Join(root, dir), false, "./...") {
			if w, ok := ws[path]; ok && w != v {
				t.Errorf("module %s compiles %s %s on its own, the workspace %s", dir, path, v, w)
			}
		}
	}
}

// TestSetVersionScript runs scripts/set-version.sh on a copy of the
// repository's go.mod files, go.work and version file.
func TestSetVersionScript(t *testing.T) {
	root := repoRoot(t)
	scratch := t.TempDir()
	copyFile := func(rel string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(scratch, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var gomods []string
	for _, gomod := range allGoMods(t, root) {
		rel, _ := filepath.Rel(root, gomod)
		gomods = append(gomods, rel)
		copyFile(rel)
	}
	for _, rel := range []string{"go.work", "scripts/set-version.sh", "server/config/version.go"} {
		copyFile(rel)
	}
	script := filepath.Join(scratch, "scripts", "set-version.sh")
	run := func(args ...string) (string, error) {
		out, err := exec.Command(script, args...).CombinedOutput()
		return string(out), err
	}
	snapshot := func() map[string]string {
		files := map[string]string{}
		for _, rel := range append(slices.Clone(gomods), "server/config/version.go") {
			data, err := os.ReadFile(filepath.Join(scratch, rel))
			if err != nil {
				t.Fatal(err)
			}
			files[rel] = string(data)
		}
		return files
	}

	for _, bad := range []string{"", "1.2.3", "v1.2", "v01.2.3", "v2.0.0"} {
		before := snapshot()
		if out, err := run(bad); err == nil {
			t.Errorf("set-version %q succeeded:\n%s", bad, out)
		}
		if !maps.Equal(before, snapshot()) {
			t.Errorf("set-version %q changed files though it failed", bad)
		}
	}

	const next = "v1.4.0-rc.1"
	before := snapshot()
	out, err := run("-n", next)
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if !maps.Equal(before, snapshot()) {
		t.Error("the dry run changed files")
	}
	if !strings.Contains(out, " -> "+next) {
		t.Errorf("the dry run names no change:\n%s", out)
	}

	out, err = run(next)
	if err != nil {
		t.Fatalf("set-version: %v\n%s", err, out)
	}
	var wantTags []string
	for _, dir := range workspaceModules(t, root) {
		if dir == "." {
			wantTags = append(wantTags, next)
		} else {
			wantTags = append(wantTags, filepath.ToSlash(dir)+"/"+next)
		}
	}
	_, tagList, ok := strings.Cut(out, "tags to push:\n")
	if !ok {
		t.Fatalf("no tag list in the output:\n%s", out)
	}
	gotTags := strings.Fields(tagList)
	slices.Sort(gotTags)
	slices.Sort(wantTags)
	if !slices.Equal(gotTags, wantTags) {
		t.Errorf("tags %v, want %v", gotTags, wantTags)
	}
	requires := 0
	for _, rel := range gomods {
		f := readGoMod(t, filepath.Join(scratch, rel))
		orig := readGoMod(t, filepath.Join(root, rel))
		for _, r := range f.Require {
			if !strings.HasPrefix(r.Path, prefix) {
				continue
			}
			requires++
			if r.Version != next {
				t.Errorf("%s still requires %s %s", rel, r.Path, r.Version)
			}
		}
		if len(f.Replace) != len(orig.Replace) || len(f.Require) != len(orig.Require) {
			t.Errorf("%s: requirements or replace directives added or lost", rel)
		}
	}
	if requires == 0 {
		t.Fatal("no cairn module requirement found: the check would pass vacuously")
	}
	version, err := os.ReadFile(filepath.Join(scratch, "server/config/version.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(version), `"`+strings.TrimPrefix(next, "v")+`"`) {
		t.Errorf("version.go does not carry %s:\n%s", next, version)
	}

	// Run again: nothing left to change.
	if out, err := run(next); err != nil || !strings.Contains(out, "0 change(s)") {
		t.Errorf("second run: %v\n%s", err, out)
	}
}

// TestDockerfileCopiesEveryModule: the image's download layer copies the
// go.work and every workspace module's go.mod and go.sum before the
// sources: `go mod download` there fails when a replace directive points
// at a directory whose go.mod was not copied (and without go.sum it has
// nothing to verify the downloads against).
func TestDockerfileCopiesEveryModule(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	copied := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] != "COPY" || strings.HasPrefix(fields[1], "--") {
			continue
		}
		for _, src := range fields[1 : len(fields)-1] {
			copied[src] = true
		}
	}
	want := []string{"go.work"}
	for _, dir := range workspaceModules(t, root) {
		for _, f := range []string{"go.mod", "go.sum"} {
			want = append(want, filepath.ToSlash(filepath.Join(dir, f)))
		}
	}
	for _, f := range want {
		if !copied[f] {
			t.Errorf("the Dockerfile does not COPY %s before `go mod download`", f)
		}
	}
}
