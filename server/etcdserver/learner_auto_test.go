package etcdserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cairnkv/cairn/server/membership"
)

func TestPromoteTracker(t *testing.T) {
	const a, b = 1, 2
	t0 := time.Unix(1000, 0)
	p := newPromoteTracker(10 * time.Second)
	steps := []struct {
		id       uint64
		caughtUp bool
		at       time.Duration
		want     bool
	}{
		{a, true, 0, false},                 // starts the clock
		{a, true, 9 * time.Second, false},   // not long enough yet
		{a, false, 10 * time.Second, false}, // an interruption resets it
		{a, true, 11 * time.Second, false},
		{b, true, 12 * time.Second, false},
		{a, true, 20 * time.Second, false},
		{a, true, 21 * time.Second, true}, // caught up for 10s without a break
		{b, true, 22 * time.Second, true},
	}
	for i, st := range steps {
		if got := p.observe(st.id, st.caughtUp, t0.Add(st.at)); got != st.want {
			t.Fatalf("step %d: observe(%d, %v, +%v) = %v, want %v", i, st.id, st.caughtUp, st.at, got, st.want)
		}
	}
	p.keep(map[uint64]bool{b: true})
	if _, ok := p.since[a]; ok {
		t.Error("keep did not forget a learner that is gone")
	}
	if _, ok := p.since[b]; !ok {
		t.Error("keep forgot a learner that is still there")
	}
	p.reset()
	if len(p.since) != 0 {
		t.Error("reset left learners behind")
	}
	// With no duration a learner is promotable at the first sighting.
	if !newPromoteTracker(0).observe(a, true, t0) {
		t.Error("zero duration: not promotable at once")
	}
}

// A member added under --experimental-member-add-as-learner with a peer URL
// nobody serves joins as a learner: the one voter keeps its quorum, writes
// go on, the leader never promotes the learner, and it can be removed.
func TestMemberAddAsLearnerKeepsQuorum(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MemberAddAsLearner = true
	s := startServer(t, cfg)
	if !s.cfg.autoPromoteEnabled() {
		t.Fatal("--experimental-member-add-as-learner does not turn automatic promotion on")
	}
	m, _, err := s.memberAdmin.MemberAdd(testCtx(t), []string{"http://127.0.0.1:1"}, false)
	if err != nil {
		t.Fatalf("MemberAdd: %v", err)
	}
	if !m.IsLearner {
		t.Fatal("MemberAdd added a voter under --experimental-member-add-as-learner")
	}
	if got := memberByID(s.stores.members(), m.ID); got == nil || !got.IsLearner {
		t.Fatalf("member list has %+v, want a learner", got)
	}
	mustPut(t, s, "after-add", "v")

	tr := newPromoteTracker(0)
	for range 3 {
		if id := stewardOf(s).autoPromoteTick(testCtx(t), tr, time.Now()); id != 0 {
			t.Fatalf("promoted unreachable learner %x", id)
		}
	}
	if len(tr.since) != 0 {
		t.Errorf("an unreachable learner counts as caught up: %v", tr.since)
	}
	mustPut(t, s, "after-ticks", "v")

	if _, err := s.memberAdmin.MemberRemove(testCtx(t), m.ID); err != nil {
		t.Fatalf("MemberRemove: %v", err)
	}
	mustPut(t, s, "after-remove", "v")
	if len(s.stores.members()) != 1 {
		t.Fatalf("members after remove: %v", s.stores.members())
	}
}

func TestMemberAddVoterByDefault(t *testing.T) {
	s := startServer(t, testConfig(t.TempDir()))
	if s.cfg.autoPromoteEnabled() {
		t.Fatal("automatic promotion is on by default")
	}
	m, _, err := s.memberAdmin.MemberAdd(testCtx(t), []string{"http://127.0.0.1:1"}, false)
	if err != nil {
		t.Fatalf("MemberAdd: %v", err)
	}
	if m.IsLearner {
		t.Fatal("MemberAdd added a learner without the cairn flag")
	}
}

func TestLearnerSettingsEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name          string
		readOnly, opt bool
		want          LearnerSettings
	}{
		{"default", false, false, LearnerSettings{AutoPromote: true}},
		{"read-only", true, false, LearnerSettings{ReadOnly: true}},
		{"opt-out", false, true, LearnerSettings{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.LearnerReadOnly, cfg.LearnerNoAutoPromote = tc.readOnly, tc.opt
			s := startServer(t, cfg)
			hs := httptest.NewServer(s.PeerHandler())
			defer hs.Close()
			got, err := stewardOf(s).fetchLearnerSettings(testCtx(t), &membership.Member{PeerURLs: []string{hs.URL}})
			if err != nil {
				t.Fatalf("fetchLearnerSettings: %v", err)
			}
			if got != tc.want {
				t.Errorf("settings = %+v, want %+v", got, tc.want)
			}
			if s.IsReadOnlyLearner() {
				t.Error("a voter reports itself a read-only learner")
			}
		})
	}
}

// A member that does not serve the settings path (etcd) keeps the defaults;
// one that cannot be reached is an error.
func TestFetchLearnerSettingsFallbacks(t *testing.T) {
	s := &Server{cfg: &Config{}}
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	got, err := stewardOf(s).fetchLearnerSettings(context.Background(), &membership.Member{PeerURLs: []string{notFound.URL}})
	if err != nil || !got.AutoPromote {
		t.Errorf("404: settings %+v, %v; want the defaults", got, err)
	}
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer broken.Close()
	if _, err := stewardOf(s).fetchLearnerSettings(context.Background(), &membership.Member{PeerURLs: []string{broken.URL}}); err == nil {
		t.Error("500: no error")
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	if _, err := stewardOf(s).fetchLearnerSettings(context.Background(), &membership.Member{PeerURLs: []string{closed.URL}}); err == nil {
		t.Error("unreachable: no error")
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode("not settings")
	}))
	defer bad.Close()
	if _, err := stewardOf(s).fetchLearnerSettings(context.Background(), &membership.Member{PeerURLs: []string{bad.URL}}); err == nil {
		t.Error("garbage: no error")
	}
}

func TestAutoPromoteInterval(t *testing.T) {
	for _, tc := range []struct {
		after, tick, want time.Duration
	}{
		{30 * time.Second, 100 * time.Millisecond, time.Second},
		{2 * time.Second, 100 * time.Millisecond, 200 * time.Millisecond},
		{100 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond},
	} {
		c := &Config{LearnerAutoPromoteAfter: tc.after, TickMs: uint(tc.tick / time.Millisecond)}
		if got := c.autoPromoteInterval(); got != tc.want {
			t.Errorf("after %v, tick %v: interval %v, want %v", tc.after, tc.tick, got, tc.want)
		}
	}
	if got := (&Config{}).autoPromoteAfter(); got != defaultAutoPromoteAfter {
		t.Errorf("default duration %v, want %v", got, defaultAutoPromoteAfter)
	}
}

// stewardOf is the learner steward a started member s runs.
func stewardOf(s *Server) *learnerSteward {
	return newLearnerSteward(s.cfg, s.id, stewardMember{s.view(), s.memberAdmin}, s.stopc)
}
