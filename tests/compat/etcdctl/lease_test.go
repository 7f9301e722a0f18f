package etcdctl

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// Lease IDs are chosen by each server (from its member ID and the clock),
// so the same command grants different IDs on etcd and on cairn. A
// leaseSession records, per server, the ID each grant step answered under
// a name; "{lease:NAME}" in arguments stands for that server's ID in hex,
// and in outputs every rendering of a recorded ID (hex as etcdctl prints it,
// decimal as JSON and fields print it) becomes "<lease:NAME>".
//
// The remaining TTL that TimeToLive reports depends on when the command
// runs; a value in [granted-10, granted) is masked as "<remaining>" (etcd
// rounds the time left down, so a value equal to the granted TTL is left
// visible). etcd lists a lease's attached keys in no particular order, so
// they are sorted.

var leaseTagRE = regexp.MustCompile(`\{lease:([^}]+)\}`)

type leaseSession struct {
	p     *pair
	ids   [2]map[string]int64 // etcd's and cairn's: name -> ID
	grant int                 // grants so far, names the unnamed ones
}

func newLeaseSession(p *pair) *leaseSession {
	return &leaseSession{p: p, ids: [2]map[string]int64{{}, {}}}
}

// leaseStep is a step that may grant a lease.
type leaseStep struct {
	step
	// as names the lease a "lease grant" step grants (default "#N" for the
	// N-th grant of the session).
	as string
}

func (ls *leaseSession) checkAll(t *testing.T, steps []leaseStep) {
	t.Helper()
	for _, st := range steps {
		t.Run(st.title(), func(t *testing.T) { ls.check(t, st) })
	}
}

func (ls *leaseSession) expand(t *testing.T, side int, args []string) []string {
	t.Helper()
	out := ls.p.both()[side].expand(args)
	for i, a := range out {
		out[i] = leaseTagRE.ReplaceAllStringFunc(a, func(tag string) string {
			name := leaseTagRE.FindStringSubmatch(tag)[1]
			id, ok := ls.ids[side][name]
			if !ok {
				t.Fatalf("no lease %q granted on %s", name, ls.p.both()[side].kind)
			}
			return strconv.FormatInt(id, 16)
		})
	}
	return out
}

func (ls *leaseSession) check(t *testing.T, st leaseStep) {
	t.Helper()
	var res [2]result
	var wg sync.WaitGroup
	for i, s := range ls.p.both() {
		args := ls.expand(t, i, st.args)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = ctl(t, s, st.stdin, args...)
		}()
	}
	wg.Wait()
	if len(st.args) >= 2 && st.args[0] == "lease" && st.args[1] == "grant" {
		ls.grant++
		name := st.as
		if name == "" {
			name = fmt.Sprintf("#%d", ls.grant)
		}
		for i, s := range ls.p.both() {
			if res[i].exit != 0 {
				continue
			}
			var id int64
			var err error
			if outputFormat(st.args) == "protobuf" {
				id, err = ls.newLease(t, i)
			} else {
				id, err = grantedID(res[i].stdout, outputFormat(st.args))
			}
			if err != nil {
				t.Errorf("%s: %v", s.kind, err)
				continue
			}
			ls.ids[i][name] = id
		}
	}
	ne := ls.normalise(0, res[0], st.args)
	nc := ls.normalise(1, res[1], st.args)
	t.Logf("etcdctl %s (etcd, normalised):\n%s", describe(st.step), ne)
	if ne != nc {
		t.Errorf("etcdctl %s: outputs differ (-etcd +cairn):\n%s", describe(st.step), unifiedDiff(ne, nc))
	}
	if res[0].exit != st.wantExit {
		t.Errorf("etcdctl %s: etcd exited %d, the test expects %d:\n%s", describe(st.step), res[0].exit, st.wantExit, ne)
	}
	if st.want != "" && !strings.Contains(ne, st.want) {
		t.Errorf("etcdctl %s: etcd's output lacks %q:\n%s", describe(st.step), st.want, ne)
	}
}

// newLease finds the one lease on side's server that no name stands for
// yet: lease grant -w protobuf does not print the ID.
func (ls *leaseSession) newLease(t *testing.T, side int) (int64, error) {
	t.Helper()
	r := ctl(t, ls.p.both()[side], "", "lease", "list", "-w", "json")
	var resp struct {
		Leases []struct {
			ID int64 `json:"id"`
		} `json:"leases"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil {
		return 0, fmt.Errorf("lease list -w json: %v (%q)", err, r.stdout)
	}
	var fresh []int64
	for _, l := range resp.Leases {
		known := false
		for _, id := range ls.ids[side] {
			known = known || id == l.ID
		}
		if !known {
			fresh = append(fresh, l.ID)
		}
	}
	if len(fresh) != 1 {
		return 0, fmt.Errorf("after lease grant -w protobuf, lease list shows the unnamed leases %v, want one", fresh)
	}
	return fresh[0], nil
}

var (
	grantSimpleRE = regexp.MustCompile(`^lease ([0-9a-f]+) granted with TTL`)
	grantJSONRE   = regexp.MustCompile(`"ID":(\d+)`)
	grantFieldsRE = regexp.MustCompile(`(?m)^"ID" : (\d+)$`)
)

// grantedID extracts the ID from lease grant's output in format f.
func grantedID(out, f string) (int64, error) {
	var m []string
	switch f {
	case "simple":
		if m = grantSimpleRE.FindStringSubmatch(out); m != nil {
			return strconv.ParseInt(m[1], 16, 64)
		}
	case "json":
		m = grantJSONRE.FindStringSubmatch(out)
	case "fields":
		m = grantFieldsRE.FindStringSubmatch(out)
	}
	if m == nil {
		return 0, fmt.Errorf("no lease ID in lease grant -w %s output %q", f, out)
	}
	return strconv.ParseInt(m[1], 10, 64)
}

var (
	ttlSimpleRE  = regexp.MustCompile(`granted with TTL\((\d+)s\), remaining\((-?\d+)s\)`)
	ttlJSONRE    = regexp.MustCompile(`"ttl":(-?\d+),"granted-ttl":(\d+)`)
	ttlFieldsRE  = regexp.MustCompile(`"TTL" : (-?\d+)\n"GrantedTTL" : (\d+)`)
	keysSimpleRE = regexp.MustCompile(`attached keys\(\[(.*)\]\)`)
	keysJSONRE   = regexp.MustCompile(`"keys":\[([^\]]*)\]`)
	// The marshal error of an unsupported -w protobuf prints the response
	// struct, pointers and raft term included.
	pointerRE  = regexp.MustCompile(`0x[0-9a-f]{6,}`)
	raftTermRE = regexp.MustCompile(`raft_term:\d+`)
)

// maskRemaining renders a remaining TTL as "<remaining>" when it is what a
// lease granted (or kept alive) moments ago has left.
func maskRemaining(remaining, granted string) string {
	r, err1 := strconv.ParseInt(remaining, 10, 64)
	g, err2 := strconv.ParseInt(granted, 10, 64)
	if err1 == nil && err2 == nil && r < g && r >= g-10 {
		return "<remaining>"
	}
	return remaining
}

func sortedJoin(items []string, sep string) string {
	items = slices.Clone(items)
	slices.Sort(items)
	return strings.Join(items, sep)
}

// normaliseLeaseOutput masks the remaining TTL and sorts attached keys in
// lease timetolive output of format f.
func normaliseLeaseOutput(out, f string) string {
	switch f {
	case "simple":
		out = ttlSimpleRE.ReplaceAllStringFunc(out, func(s string) string {
			m := ttlSimpleRE.FindStringSubmatch(s)
			r := maskRemaining(m[2], m[1])
			if r == m[2] {
				r += "s"
			}
			return fmt.Sprintf("granted with TTL(%ss), remaining(%s)", m[1], r)
		})
		out = keysSimpleRE.ReplaceAllStringFunc(out, func(s string) string {
			return "attached keys([" + sortedJoin(strings.Fields(keysSimpleRE.FindStringSubmatch(s)[1]), " ") + "])"
		})
	case "json":
		out = ttlJSONRE.ReplaceAllStringFunc(out, func(s string) string {
			m := ttlJSONRE.FindStringSubmatch(s)
			return fmt.Sprintf(`"ttl":%q,"granted-ttl":%s`, maskRemaining(m[1], m[2]), m[2])
		})
		out = keysJSONRE.ReplaceAllStringFunc(out, func(s string) string {
			ks := keysJSONRE.FindStringSubmatch(s)[1]
			if ks == "" {
				return s
			}
			return `"keys":[` + sortedJoin(strings.Split(ks, ","), ",") + "]"
		})
	case "fields":
		re := ttlFieldsRE
		key := `"Key" : `
		out = re.ReplaceAllStringFunc(out, func(s string) string {
			m := re.FindStringSubmatch(s)
			return strings.Replace(s, m[1], maskRemaining(m[1], m[2]), 1)
		})
		// Sort each run of consecutive key lines.
		lines := strings.Split(out, "\n")
		for i := 0; i < len(lines); {
			j := i
			for j < len(lines) && strings.HasPrefix(lines[j], key) {
				j++
			}
			if j > i {
				slices.Sort(lines[i:j])
				i = j
			} else {
				i++
			}
		}
		out = strings.Join(lines, "\n")
	}
	return out
}

// leaseProto decodes -w protobuf output of a lease subcommand and renders
// it as text with the raft term cleared. etcdctl's protobuf printer
// marshals the client's lease responses through the response header they
// embed, so that header is all the output holds (and a revoke response,
// which embeds none, cannot be printed at all).
func leaseProto(raw []byte) string {
	var m pb.ResponseHeader
	if err := proto.Unmarshal(raw, &m); err != nil {
		return fmt.Sprintf("undecodable protobuf (%v) %q", err, raw)
	}
	clearRaftTerms(m.ProtoReflect())
	b, err := prototext.MarshalOptions{Multiline: true}.Marshal(&m)
	if err != nil {
		return fmt.Sprintf("unprintable protobuf (%v) %q", err, raw)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// normalise renders side's result of args for comparison.
func (ls *leaseSession) normalise(side int, r result, args []string) string {
	s := ls.p.both()[side]
	f := outputFormat(args)
	isLease := len(args) >= 2 && args[0] == "lease"
	if isLease && f == "protobuf" && r.stdout != "" {
		r.stdout = leaseProto([]byte(r.stdout))
		// Already decoded: normalise it as text.
		args = []string{"lease"}
	} else if isLease {
		r.stdout = normaliseLeaseOutput(r.stdout, f)
	}
	out := s.normalise(r, args)
	out = pointerRE.ReplaceAllString(out, "0x"+masked)
	out = raftTermRE.ReplaceAllString(out, "raft_term:"+masked)
	// Longest renderings first, so that no ID's rendering is replaced
	// inside another's.
	type rendering struct{ text, tag string }
	var rs []rendering
	for name, id := range ls.ids[side] {
		tag := "<lease:" + name + ">"
		rs = append(rs,
			rendering{fmt.Sprintf("%016x", id), tag},
			rendering{strconv.FormatInt(id, 16), tag},
			rendering{strconv.FormatInt(id, 10), tag})
	}
	slices.SortFunc(rs, func(a, b rendering) int { return len(b.text) - len(a.text) })
	for _, x := range rs {
		out = regexp.MustCompile(`\b`+x.text+`\b`).ReplaceAllString(out, x.tag)
	}
	return out
}

// leaseFormats are the output formats etcdctl offers for lease commands.
var leaseFormats = []string{"simple", "json", "fields", "protobuf"}

func leaseWithFormats(st leaseStep, fs ...string) []leaseStep {
	if len(fs) == 0 {
		fs = leaseFormats
	}
	var out []leaseStep
	for _, f := range fs {
		s := st
		s.args = append(slices.Clone(st.args), "-w", f)
		s.name = ""
		if f != "simple" {
			s.want = "" // the text in want is what -w simple prints
		}
		out = append(out, s)
	}
	return out
}

func lstep(args ...string) leaseStep { return leaseStep{step: step{args: args}} }

// TestLease grants leases in every output format, attaches keys, inspects,
// keeps alive and revokes them.
func TestLease(t *testing.T) {
	p := startPair(t)
	s := newLeaseSession(p)
	var steps []leaseStep
	add := func(st ...leaseStep) { steps = append(steps, st...) }
	// Longer TTLs for later grants: expiry order is grant order.
	add(
		leaseStep{step: step{args: []string{"lease", "grant", "300"}, want: "lease <lease:a> granted with TTL(300s)"}, as: "a"},
		leaseStep{step: step{args: []string{"lease", "grant", "400", "-w", "json"}, want: `"TTL": 400`}, as: "b"},
		leaseStep{step: step{args: []string{"lease", "grant", "500", "-w", "fields"}, want: `"ID" : <lease:c>`}, as: "c"},
		leaseStep{step: step{args: []string{"lease", "grant", "600", "-w", "protobuf"}, want: "revision: 1"}, as: "d"},
		leaseStep{step: step{args: []string{"put", "k1", "v1", "--lease={lease:a}"}, want: "OK"}},
		leaseStep{step: step{args: []string{"put", "k2", "v2", "--lease", "{lease:a}", "-w", "json"}, want: `"revision": 3`}},
		leaseStep{step: step{args: []string{"put", "k3", "v3", "--lease={lease:b}", "-w", "fields"}}},
		leaseStep{step: step{args: []string{"put", "k4", "v4", "--lease={lease:c}", "-w", "protobuf"}}},
		leaseStep{step: step{args: []string{"put", "k5", "v5", "--lease={lease:a}", "--prev-kv"}}},
		leaseStep{step: step{args: []string{"put", "k5", "v5b", "--prev-kv", "-w", "json"}, want: `"lease": <lease:a>`}},
	)
	add(leaseWithFormats(lstep("get", "k", "--prefix"))...)
	for _, l := range []string{"a", "b", "d"} {
		add(leaseWithFormats(lstep("lease", "timetolive", "{lease:"+l+"}"))...)
		add(leaseWithFormats(lstep("lease", "timetolive", "{lease:"+l+"}", "--keys"))...)
	}
	steps[len(steps)-8].want = "lease <lease:d> granted with TTL(600s), remaining(<remaining>)"
	add(leaseWithFormats(lstep("lease", "list"))...)
	steps[len(steps)-4].want = "found 4 leases\n<lease:a>\n<lease:b>\n<lease:c>\n<lease:d>"
	add(leaseWithFormats(lstep("lease", "keep-alive", "--once", "{lease:a}"))...)
	steps[len(steps)-4].want = "lease <lease:a> keepalived with TTL(300)"
	add(
		leaseStep{step: step{args: []string{"lease", "timetolive", "{lease:a}", "--keys"},
			want: "lease <lease:a> granted with TTL(300s), remaining(<remaining>), attached keys([k1 k2])"}},
		leaseStep{step: step{args: []string{"lease", "revoke", "{lease:b}"}, want: "lease <lease:b> revoked"}},
		leaseStep{step: step{args: []string{"get", "k", "--prefix", "-w", "json"}}},
		leaseStep{step: step{args: []string{"lease", "timetolive", "{lease:b}"}, want: "lease <lease:b> already expired"}},
		leaseStep{step: step{args: []string{"lease", "timetolive", "{lease:b}", "--keys", "-w", "json"}}},
		leaseStep{step: step{args: []string{"lease", "revoke", "{lease:b}"}, wantExit: 1}},
		leaseStep{step: step{args: []string{"lease", "revoke", "{lease:c}", "-w", "json"}}},
		leaseStep{step: step{args: []string{"lease", "revoke", "{lease:d}", "-w", "fields"}}},
		leaseStep{step: step{args: []string{"lease", "list"}, want: "found 1 leases\n<lease:a>"}},
		leaseStep{step: step{args: []string{"get", "", "--prefix", "-w", "fields"}}},
		leaseStep{step: step{args: []string{"put", "k9", "v9", "--lease={lease:c}"}, wantExit: 1}},
		leaseStep{step: step{args: []string{"lease", "keep-alive", "--once", "{lease:d}"}, wantExit: 2}},
		// etcdctl has no protobuf rendering of a revoke; the lease is
		// revoked before the printer fails.
		leaseStep{step: step{args: []string{"lease", "revoke", "{lease:a}", "-w", "protobuf"}, wantExit: 4}},
		leaseStep{step: step{args: []string{"get", "", "--prefix"}}},
		leaseStep{step: step{args: []string{"lease", "list", "-w", "json"}}},
	)
	s.checkAll(t, steps)
}

// TestLeaseListOrder lists leases whose expiry order differs from the
// order in which they were granted (and from their IDs' order): etcd lists
// them by expiry, soonest first.
func TestLeaseListOrder(t *testing.T) {
	p := startPair(t)
	s := newLeaseSession(p)
	s.checkAll(t, []leaseStep{
		{step: step{args: []string{"lease", "grant", "900"}}, as: "long"},
		{step: step{args: []string{"lease", "grant", "300"}}, as: "short"},
		{step: step{args: []string{"lease", "grant", "600"}}, as: "middle"},
		{step: step{args: []string{"lease", "list"}, want: "found 3 leases\n<lease:short>\n<lease:middle>\n<lease:long>"}},
		{step: step{args: []string{"lease", "list", "-w", "json"}}},
	})
}

// TestLeaseErrors covers unknown leases, bad arguments and TTL limits.
func TestLeaseErrors(t *testing.T) {
	p := startPair(t)
	s := newLeaseSession(p)
	var steps []leaseStep
	add := func(st ...leaseStep) { steps = append(steps, st...) }
	notFound := "etcdserver: requested lease not found"
	add(
		leaseStep{step: step{args: []string{"lease", "revoke", "1234"}, want: notFound, wantExit: 1}},
		leaseStep{step: step{args: []string{"lease", "revoke", "1234", "-w", "json"}, want: notFound, wantExit: 1}},
		leaseStep{step: step{args: []string{"lease", "revoke", "0"}, wantExit: 1}},
		leaseStep{step: step{args: []string{"lease", "revoke", "--", "-5"}, wantExit: 1}},
	)
	add(leaseWithFormats(leaseStep{step: step{args: []string{"lease", "timetolive", "1234"}, want: "lease 0000000000001234 already expired"}})...)
	add(leaseWithFormats(lstep("lease", "timetolive", "1234", "--keys"))...)
	add(
		leaseStep{step: step{args: []string{"lease", "timetolive", "0"}}},
		leaseStep{step: step{args: []string{"lease", "keep-alive", "--once", "1234"}, want: notFound, wantExit: 2}},
		leaseStep{step: step{args: []string{"lease", "keep-alive", "--once", "1234", "-w", "json"}, want: notFound, wantExit: 2}},
		leaseStep{step: step{args: []string{"lease", "keep-alive", "--once", "0"}, wantExit: 2}},
		leaseStep{step: step{args: []string{"put", "k", "v", "--lease=1234"}, want: "Error: " + notFound, wantExit: 1}},
		leaseStep{step: step{args: []string{"put", "k", "v", "--lease=zz"}, want: "Error: bad lease ID (strconv.ParseInt: parsing \"zz\": invalid syntax), expecting ID in Hex", wantExit: 128}},
		leaseStep{step: step{args: []string{"lease", "revoke", "zz"}, want: "Error: bad lease ID arg", wantExit: 128}},
		leaseStep{step: step{args: []string{"lease", "timetolive", "zz"}, want: "Error: bad lease ID arg", wantExit: 128}},
		leaseStep{step: step{args: []string{"lease", "keep-alive", "--once", "xyz"}, want: "Error: bad lease ID arg", wantExit: 128}},
		leaseStep{step: step{args: []string{"lease", "revoke"}, wantExit: 128}},
		leaseStep{step: step{args: []string{"lease", "timetolive"}, wantExit: 128}},
		leaseStep{step: step{args: []string{"lease", "keep-alive", "--once"}, wantExit: 128}},
		leaseStep{step: step{args: []string{"lease", "grant"}, wantExit: 128}},
		leaseStep{step: step{args: []string{"lease", "grant", "abc"}, wantExit: 128}},
		leaseStep{step: step{args: []string{"lease", "grant", "9000000001"}, want: "etcdserver: too large lease TTL", wantExit: 1}},
		leaseStep{step: step{args: []string{"lease", "grant", "9000000001", "-w", "json"}, want: "etcdserver: too large lease TTL", wantExit: 1}},
		leaseStep{step: step{args: []string{"lease", "list"}, want: "found 0 leases"}},
	)
	// TTLs below the minimum become the minimum.
	for _, ttl := range []string{"0", "1", "-1", "2", "3", "9000000000"} {
		add(leaseStep{step: step{args: []string{"lease", "grant", "--", ttl}}})
	}
	add(leaseStep{step: step{args: []string{"lease", "grant", "1", "-w", "json"}, want: `"TTL": 2`}})
	// Unsupported output formats: a grant is made before its printer
	// fails; a request that fails is reported as such.
	add(
		leaseStep{step: step{args: []string{"lease", "grant", "100", "-w", "table"}, want: "Error: table not supported as output format", wantExit: 4}},
		leaseStep{step: step{args: []string{"lease", "timetolive", "1234", "-w", "table"}, want: "Error: table not supported as output format", wantExit: 4}},
		leaseStep{step: step{args: []string{"lease", "list", "-w", "table"}, want: "Error: table not supported as output format", wantExit: 4}},
		leaseStep{step: step{args: []string{"lease", "keep-alive", "--once", "1234", "-w", "table"}, want: notFound, wantExit: 2}},
		leaseStep{step: step{args: []string{"lease", "revoke", "1234", "-w", "table"}, want: notFound, wantExit: 1}},
		leaseStep{step: step{args: []string{"lease", "revoke", "1234", "-w", "protobuf"}, want: notFound, wantExit: 1}},
	)
	s.checkAll(t, steps)
}
