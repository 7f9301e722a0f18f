package e2e

import (
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// memberURLCases are peer URL lists for MemberAdd and MemberUpdate: etcd's
// rules refuse a scheme other than http, https, unix and unixs, an
// http(s) address that is not host:port, and a path; what passes is stored
// trimmed, normalized and sorted.
var memberURLCases = []struct {
	name string
	urls []string
}{
	{"no port", []string{"http://127.0.0.1"}},
	{"path", []string{"http://127.0.0.1:12380/raft"}},
	{"root path", []string{"http://127.0.0.1:12380/"}},
	{"scheme", []string{"ftp://127.0.0.1:12380"}},
	{"no scheme", []string{"127.0.0.1:12380"}},
	{"empty string", []string{""}},
	{"none", nil},
	{"one bad of two", []string{"http://127.0.0.1:12381", "https://127.0.0.1"}},
	{"unparsable", []string{"http://127.0.0.1:12380/%zz"}},
	{"spaces", []string{"  http://127.0.0.1:12382 "}},
	{"upper-case scheme", []string{"HTTP://127.0.0.1:12383"}},
	{"unsorted", []string{"http://127.0.0.1:12385", "http://127.0.0.1:12384"}},
	{"query", []string{"http://127.0.0.1:12386?x=1"}},
	{"empty host", []string{"http://:12387"}},
	{"spaces and case", []string{" https://127.0.0.1:12390", "HTTP://127.0.0.1:12391"}},
	{"unix", []string{"unix://localhost:12388"}},
	{"unixs with path", []string{"unixs://localhost:12389/p"}},
}

// TestMemberURLValidationLikeEtcd runs MemberAdd (as a learner) with every
// case against cairn and etcd v3.7.3 and requires the same answers: the
// same error, or the same peer URLs stored. MemberUpdate of a learner
// must then store what etcd stores for every list etcd's MemberAdd takes,
// and refuse the others with MemberAdd's error. Those are not sent to
// etcd: v3.7.3 checks nothing in MemberUpdate and its member panics
// applying a URL without a port ("failed NewURLs"), again at every restart.
func TestMemberURLValidationLikeEtcd(t *testing.T) {
	type answer struct{ add, update string }
	answers := map[string][]answer{}
	for _, bin := range []string{"cairn", "etcd"} {
		o := memberOpts{args: []string{"--max-learners", "5"}}
		if bin == "etcd" {
			o.bin = etcdBinary(t)
		}
		m := startMember(t, o)
		cl := pb.NewClusterClient(m.client(t).ActiveConnection())
		added, err := cl.MemberAdd(ctx(t), &pb.MemberAddRequest{PeerURLs: []string{"http://127.0.0.1:12399"}, IsLearner: true})
		must(t, err)
		learner := added.Member.ID
		for _, tc := range memberURLCases {
			add, err := cl.MemberAdd(ctx(t), &pb.MemberAddRequest{PeerURLs: tc.urls, IsLearner: true})
			a := answer{add: describeAnswer(err, func() []string { return add.Member.PeerURLs })}
			if err == nil {
				_, err = cl.MemberRemove(ctx(t), &pb.MemberRemoveRequest{ID: add.Member.ID})
				must(t, err)
			}
			if bin == "cairn" || err == nil {
				_, err = cl.MemberUpdate(ctx(t), &pb.MemberUpdateRequest{ID: learner, PeerURLs: tc.urls})
				a.update = describeAnswer(err, func() []string { return learnerURLs(t, cl, learner) })
			}
			answers[bin] = append(answers[bin], a)
		}
	}
	for i, tc := range memberURLCases {
		c, e := answers["cairn"][i], answers["etcd"][i]
		if c.add != e.add {
			t.Errorf("%s: MemberAdd: cairn %s, etcd %s", tc.name, c.add, e.add)
		}
		wantUpdate := e.update
		if e.update == "" {
			wantUpdate = e.add // refused by etcd's MemberAdd: the same error
		}
		if c.update != wantUpdate {
			t.Errorf("%s: MemberUpdate: cairn %s, want %s", tc.name, c.update, wantUpdate)
		}
	}
}

func describeAnswer(err error, urls func() []string) string {
	if err != nil {
		return describeErr(err)
	}
	return "ok " + strings.Join(urls(), ",")
}

func learnerURLs(t *testing.T, cl pb.ClusterClient, id uint64) []string {
	t.Helper()
	list, err := cl.MemberList(ctx(t), &pb.MemberListRequest{Linearizable: true})
	must(t, err)
	for _, m := range list.Members {
		if m.ID == id {
			return m.PeerURLs
		}
	}
	t.Fatalf("member %x missing", id)
	return nil
}
