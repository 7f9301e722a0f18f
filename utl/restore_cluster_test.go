package utl

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func parseRestoreClusterFlags(t *testing.T, args ...string) (*restoreClusterFlags, []string, error) {
	t.Helper()
	r := &restoreClusterFlags{}
	e := &env{stdout: &strings.Builder{}, stderr: &strings.Builder{}}
	pos, err := e.parseCommand("snapshot restore-cluster", args, r.define)
	return r, pos, err
}

func TestRestoreClusterFlagDefaults(t *testing.T) {
	r, pos, err := parseRestoreClusterFlags(t, "snap.db", "--initial-cluster", "a=http://127.0.0.1:1,b=http://127.0.0.1:2")
	if err != nil {
		t.Fatal(err)
	}
	c := r.cfg
	if !reflect.DeepEqual(pos, []string{"snap.db"}) || c.RevisionBump != 1_000_000_000 ||
		!c.MarkCompacted || c.SkipHashCheck || c.DataDirPrefix != "" || r.dataDirs != "" ||
		c.InitialClusterToken != "etcd-cluster" || c.InitialMmapSize != defaultMmapSize {
		t.Fatalf("defaults: pos %v cfg %+v data-dirs %q", pos, c, r.dataDirs)
	}
	r, _, err = parseRestoreClusterFlags(t, "--initial-cluster", "a=http://x:1", "--initial-cluster-token", "tok",
		"--data-dir-prefix", "/d", "--bump-revision", "5", "--mark-compacted=false", "--skip-hash-check", "snap.db", "--data-dirs", "a=/x")
	if err != nil {
		t.Fatal(err)
	}
	c = r.cfg
	if c.InitialClusterToken != "tok" || c.DataDirPrefix != "/d" || c.RevisionBump != 5 || c.MarkCompacted || !c.SkipHashCheck || r.dataDirs != "a=/x" {
		t.Fatalf("explicit: %+v", c)
	}
}

func TestParseDataDirs(t *testing.T) {
	got, err := parseDataDirs("a=/x,b=rel/y")
	if err != nil || !reflect.DeepEqual(got, map[string]string{"a": "/x", "b": "rel/y"}) {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := parseDataDirs(""); got != nil || err != nil {
		t.Fatalf("empty: %v %v", got, err)
	}
	for _, bad := range []string{"a", "a=", "=x", "a=x,a=y"} {
		if _, err := parseDataDirs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestRestoreClusterWritesEveryMember(t *testing.T) {
	snapPath := withHash(t, makeDB(t, 5))
	prefix := t.TempDir()
	var out, errb strings.Builder
	ic := "m0=http://127.0.0.1:1,m1=http://127.0.0.1:2,m2=http://127.0.0.1:3"
	if code := Main([]string{"snapshot", "restore-cluster", snapPath, "--initial-cluster", ic, "--data-dir-prefix", prefix}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("output %q", out.String())
	}
	for i, name := range []string{"m0", "m1", "m2"} {
		dir := filepath.Join(prefix, name+".etcd")
		if !strings.Contains(lines[i], "member "+name+" ") || !strings.Contains(lines[i], dir) || !strings.Contains(lines[i], "bumped by 1000000000") {
			t.Errorf("line %d: %q", i, lines[i])
		}
		st, err := SnapshotStatus(filepath.Join(dir, "member", "snap", "db"))
		if err != nil || st.Revision < DefaultClusterRevisionBump {
			t.Errorf("%s: status %+v %v", name, st, err)
		}
	}
	// The data dirs are now used: a second run refuses before writing.
	if code := Main([]string{"snapshot", "restore-cluster", snapPath, "--initial-cluster", ic, "--data-dir-prefix", prefix}, &out, &errb); code == 0 {
		t.Fatal("restore over used data dirs succeeded")
	}
}

func TestRestoreClusterChecksEverythingFirst(t *testing.T) {
	snapPath := withHash(t, makeDB(t, 3))
	base := t.TempDir()
	ic := "a=http://127.0.0.1:1,b=http://127.0.0.1:2"
	used := filepath.Join(base, "b")
	os.MkdirAll(used, 0o700)
	os.WriteFile(filepath.Join(used, "x"), nil, 0o600)
	cfg := RestoreClusterConfig{SnapshotPath: snapPath, InitialCluster: ic, RevisionBump: 10, MarkCompacted: true,
		DataDirs: map[string]string{"a": filepath.Join(base, "a"), "b": used}}
	if err := RestoreCluster(cfg, nil); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("used dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "a")); !os.IsNotExist(err) {
		t.Fatalf("member a written although b could not be: %v", err)
	}
	for _, c := range []struct {
		dirs map[string]string
		want string
	}{
		{map[string]string{"a": filepath.Join(base, "a")}, "no data dir for member \"b\""},
		{map[string]string{"a": filepath.Join(base, "a"), "b": filepath.Join(base, "a")}, "share data dir"},
		{map[string]string{"a": "x", "b": "y", "c": "z"}, "not in --initial-cluster"},
	} {
		cfg.DataDirs = c.dirs
		if err := RestoreCluster(cfg, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.dirs, err, c.want)
		}
	}
	// A failing restore (bad hash) leaves nothing behind.
	data, _ := os.ReadFile(snapPath)
	data[len(data)-1] ^= 1
	os.WriteFile(snapPath, data, 0o600)
	cfg.DataDirs = map[string]string{"a": filepath.Join(base, "a"), "b": filepath.Join(base, "c")}
	if err := RestoreCluster(cfg, nil); err == nil {
		t.Fatal("bad hash accepted")
	}
	for _, d := range []string{"a", "c"} {
		if _, err := os.Stat(filepath.Join(base, d)); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", d, err)
		}
	}
}

func TestRestoreClusterExitCodes(t *testing.T) {
	snapPath := withHash(t, makeDB(t, 2))
	ic := "a=http://127.0.0.1:1"
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"snapshot", "restore-cluster"}, exitBadArgs},
		{[]string{"snapshot", "restore-cluster", snapPath}, exitGeneric},
		{[]string{"snapshot", "restore-cluster", snapPath, "--initial-cluster", ic, "--bump-revision", "0"}, exitBadArgs},
		{[]string{"snapshot", "restore-cluster", snapPath, "--initial-cluster", ic, "--data-dirs", "a"}, exitBadArgs},
		{[]string{"snapshot", "restore-cluster", snapPath, "--initial-cluster", ic, "--data-dirs", "a=/x", "--data-dir-prefix", "/y"}, exitGeneric},
	} {
		var out, errb strings.Builder
		if code := Main(c.args, &out, &errb); code != c.code {
			t.Errorf("%v: exit %d (%s), want %d", c.args, code, errb.String(), c.code)
		}
	}
}
