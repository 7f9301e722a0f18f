package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

// refusalAdvice ends every refusal of a member whose ID the WAL named.
func refusalAdvice(id string) string {
	return "this member must not serve or vote with these files: " +
		"restore its data directory from a snapshot (cairnutl snapshot restore), " +
		"or remove it from the cluster (cairnctl member remove " + id + ") and add it back as a new member with an empty data directory"
}

// memberIDIn returns the member ID the refusal in out names.
func memberIDIn(out string) string {
	_, after, _ := strings.Cut(out, "(cairnctl member remove ")
	id, _, _ := strings.Cut(after, ")")
	if _, err := strconv.ParseUint(id, 16, 64); err != nil { // not "<member ID>": the WAL names it
		return "a member ID in hex"
	}
	return id
}

// mustNotStart runs the member's binary on its data dir and returns its
// output, failing unless the process exits with an error and never serves.
func mustNotStart(t *testing.T, m *member) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, m.binary(), m.args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("member on damaged storage did not stop within %v:\n%s", startTimeout, out)
	}
	if err == nil {
		t.Fatalf("member started on damaged storage:\n%s", out)
	}
	if strings.Contains(string(out), readyLine) {
		t.Fatalf("member served on damaged storage:\n%s", out)
	}
	return string(out)
}

// mustRefuse is mustNotStart for storage the member checks at start: it
// must also have exited with the inconsistent-storage refusal.
func mustRefuse(t *testing.T, m *member) string {
	t.Helper()
	out := mustNotStart(t, m)
	if !strings.Contains(out, "inconsistent storage, refusing to start: ") {
		t.Fatalf("member exited without the refusal:\n%s", out)
	}
	return out
}

// stoppedWithKeys starts a member with opts, puts n keys k0000, k0001, ...
// with value and stops it cleanly: the data dir the storage tests damage.
func stoppedWithKeys(t *testing.T, opts memberOpts, n int, value string) *member {
	t.Helper()
	m := startMember(t, opts)
	cli := m.client(t)
	for i := range n {
		mustPut(t, cli, fmt.Sprintf("k%04d", i), value)
	}
	must(t, m.stop())
	return m
}

// walSegments returns the member's WAL segments, oldest first.
func walSegments(t *testing.T, dataDir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dataDir, "member", "wal", "*.wal"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no wal files in %s: %v", dataDir, err)
	}
	sort.Strings(names)
	return names
}

// cutInTheMiddle truncates seg inside a record halfway through its used
// part, as in the reproduction, and returns the new size.
func cutInTheMiddle(t *testing.T, seg string) int64 {
	t.Helper()
	data, err := os.ReadFile(seg)
	must(t, err)
	used := int64(len(bytes.TrimRight(data, "\x00")))
	cut := used/2&^7 + 3 // frames are 8-byte aligned: this is inside one
	must(t, os.Truncate(seg, cut))
	return cut
}

// TestRefusesCutWALSegment is issue 17's reproduction: the only segment cut
// in the middle. The member used to repair it as a torn tail, restart tens
// of thousands of entries behind its backend and time out every write.
func TestRefusesCutWALSegment(t *testing.T) {
	m := stoppedWithKeys(t, memberOpts{}, 300, strings.Repeat("v", 100))
	seg := walSegments(t, m.dataDir)[0]
	cut := cutInTheMiddle(t, seg)

	out := mustRefuse(t, m)
	want := fmt.Sprintf("the WAL in %s cannot be replayed: read wal: wal: last segment was cut short: %s is %d bytes, less than the 64000000 a segment is preallocated to",
		filepath.Join(m.dataDir, "member", "wal"), seg, cut)
	if !strings.Contains(out, want) || !strings.Contains(out, refusalAdvice(memberIDIn(out))) {
		t.Fatalf("refusal does not say %q and what to do:\n%s", want, out)
	}
}

// TestRefusesBackendWithoutItsWAL removes the WAL: the backend holds
// entries no log backs any more.
func TestRefusesBackendWithoutItsWAL(t *testing.T) {
	m := stoppedWithKeys(t, memberOpts{}, 20, "v")
	must(t, os.RemoveAll(filepath.Join(m.dataDir, "member", "wal")))

	out := mustRefuse(t, m)
	want := fmt.Sprintf("the backend %s has applied entries up to index ", filepath.Join(m.dataDir, "member", "snap", "db"))
	tail := fmt.Sprintf("but the WAL in %s ends at index 1: entries 2 to ", filepath.Join(m.dataDir, "member", "wal"))
	if !strings.Contains(out, want) || !strings.Contains(out, tail) || !strings.Contains(out, refusalAdvice(memberIDIn(out))) {
		t.Fatalf("refusal does not say %q ... %q:\n%s", want, tail, out)
	}
}

// TestRefusesMissingSnapshot deletes the newest .snap file the WAL names.
func TestRefusesMissingSnapshot(t *testing.T) {
	m := stoppedWithKeys(t, memberOpts{args: []string{"--snapshot-count", "50"}}, 200, "v")
	snaps, err := filepath.Glob(filepath.Join(m.dataDir, "member", "snap", "*.snap"))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no .snap files: %v", err)
	}
	sort.Strings(snaps)
	newest := snaps[len(snaps)-1]
	must(t, os.Remove(newest))

	out := mustRefuse(t, m)
	want := fmt.Sprintf("but its file %s is missing or unreadable", newest)
	if !strings.Contains(out, want) || !strings.Contains(out, refusalAdvice(memberIDIn(out))) {
		t.Fatalf("refusal does not name %s:\n%s", newest, out)
	}
}

// TestClusterMemberWithCutWALIsReplaced: a follower whose WAL lost entries
// it had acknowledged refuses to start, so it never votes with its old ID;
// the other two keep the cluster writable, and the member comes back by the
// advice in the message: removed, then added again with an empty data dir.
func TestClusterMemberWithCutWALIsReplaced(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	leader := c.waitLeader(c.all()...)
	f := (leader + 1) % 3
	for i := range 200 {
		mustPut(t, c.clients[leader], fmt.Sprintf("k%04d", i), strings.Repeat("v", 100))
	}
	c.waitValue(t, f, "k0199", strings.Repeat("v", 100))
	must(t, c.members[f].stop())
	segs := walSegments(t, c.members[f].dataDir)
	cutInTheMiddle(t, segs[len(segs)-1])

	out := mustRefuse(t, c.members[f])
	if !strings.Contains(out, "last segment was cut short") {
		t.Fatalf("refusal does not say the segment was cut:\n%s", out)
	}
	others := c.except(f)
	mustPut(t, c.clients[others[0]], "while-refused", "v")

	c.removeMember(t, others[0], f)
	peerURL := harness.FreeURL(t)
	id, ic := c.addVoter(t, others[0], "m3", peerURL)
	j := c.prepareJoin(t, "m3", peerURL, ic, id)
	c.members[j].start()
	c.waitValue(t, j, "while-refused", "v")
	resp, err := c.clients[j].Get(ctx(t), "k", clientv3.WithPrefix(), clientv3.WithCountOnly())
	must(t, err)
	if resp.Count != 200 {
		t.Fatalf("the re-added member has %d of the 200 keys", resp.Count)
	}
}
