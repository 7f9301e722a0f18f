package concurrency_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/client/concurrency"
	"github.com/cairnkv/cairn/tests/harness"
)

// campaignAsync starts e.Campaign and returns the channel of its result.
func campaignAsync(ctx context.Context, e *concurrency.Election, val string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- e.Campaign(ctx, val) }()
	return done
}

// leaderValue is the current leader's value.
func leaderValue(t *testing.T, ctx context.Context, e *concurrency.Election) string {
	t.Helper()
	resp, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return string(resp.Kvs[0].Value)
}

func TestElectionSuccession(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	s1, s2 := newSession(t, c), newSession(t, c)
	e1, e2 := concurrency.NewElection(s1, "succession"), concurrency.NewElection(s2, "succession")

	if err := e1.Campaign(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("succession/%x", int64(s1.Lease())); e1.Key() != want {
		t.Fatalf("leader key %q, want %q", e1.Key(), want)
	}
	done2 := campaignAsync(ctx, e2, "two")
	harness.WaitKey(t, ctx, c, fmt.Sprintf("succession/%x", int64(s2.Lease())))
	if got := leaderValue(t, ctx, e2); got != "one" {
		t.Fatalf("leader %q while the first leads, want one", got)
	}
	if err := e1.Proclaim(ctx, "uno"); err != nil {
		t.Fatal(err)
	}
	if got := leaderValue(t, ctx, e2); got != "uno" {
		t.Fatalf("leader %q after Proclaim, want uno", got)
	}
	if err := e1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done2; err != nil {
		t.Fatal(err)
	}
	if got := leaderValue(t, ctx, e1); got != "two" {
		t.Fatalf("leader %q after Resign, want two", got)
	}
	if err := e1.Proclaim(ctx, "again"); !errors.Is(err, concurrency.ErrElectionNotLeader) {
		t.Fatalf("Proclaim after Resign: %v, want ErrElectionNotLeader", err)
	}
}

func TestElectionNoLeader(t *testing.T) {
	e := concurrency.NewElection(newSession(t, newClient(t)), "nobody")
	if _, err := e.Leader(testCtx(t)); !errors.Is(err, concurrency.ErrElectionNoLeader) {
		t.Fatalf("Leader of an empty election: %v, want ErrElectionNoLeader", err)
	}
}

func TestElectionProclaimLostLeadership(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	e := concurrency.NewElection(newSession(t, c), "lost")
	if err := e.Campaign(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, e.Key()); err != nil {
		t.Fatal(err)
	}
	if err := e.Proclaim(ctx, "w"); !errors.Is(err, concurrency.ErrElectionNotLeader) {
		t.Fatalf("Proclaim after losing the key: %v, want ErrElectionNotLeader", err)
	}
}

func TestElectionCampaignAgainProclaims(t *testing.T) {
	ctx := testCtx(t)
	s := newSession(t, newClient(t))
	e := concurrency.NewElection(s, "again")
	if err := e.Campaign(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	rev := e.Rev()
	if err := concurrency.NewElection(s, "again").Campaign(ctx, "second"); err != nil {
		t.Fatal(err)
	}
	if got := leaderValue(t, ctx, e); got != "second" {
		t.Fatalf("leader %q, want the second campaign's value", got)
	}
	if e2 := concurrency.NewElection(s, "again"); e2.Campaign(ctx, "second") != nil || e2.Rev() != rev {
		t.Fatalf("a campaign of the same session must keep its key's create revision %d, got %d", rev, e2.Rev())
	}
}

func TestElectionCampaignCanceledWithdraws(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	leader := concurrency.NewElection(newSession(t, c), "withdraw")
	if err := leader.Campaign(ctx, "l"); err != nil {
		t.Fatal(err)
	}
	cancelWhileWaiting(t, ctx, c, "withdraw", "Campaign", func(ctx context.Context, s *concurrency.Session) <-chan error {
		return campaignAsync(ctx, concurrency.NewElection(s, "withdraw"), "c")
	})
}

func TestResumeElection(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	s := newSession(t, c)
	e := concurrency.NewElection(s, "resume")
	if err := e.Campaign(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	r := concurrency.ResumeElection(s, "resume", e.Key(), e.Rev())
	if err := r.Proclaim(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if got := leaderValue(t, ctx, e); got != "b" {
		t.Fatalf("leader %q after the resumed Proclaim, want b", got)
	}
	if err := r.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Leader(ctx); !errors.Is(err, concurrency.ErrElectionNoLeader) {
		t.Fatalf("Leader after the resumed Resign: %v, want ErrElectionNoLeader", err)
	}
}

func TestElectionObserve(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	s1, s2 := newSession(t, c), newSession(t, c)
	e1, e2 := concurrency.NewElection(s1, "observe"), concurrency.NewElection(s2, "observe")
	octx, stop := context.WithCancel(ctx)
	obs := concurrency.NewElection(s1, "observe").Observe(octx)

	// Nobody leads yet: the first value comes from the watch.
	if err := e1.Campaign(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	expectObserved(t, obs, "a")
	if err := e1.Proclaim(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	expectObserved(t, obs, "b")
	done2 := campaignAsync(ctx, e2, "c")
	harness.WaitKey(t, ctx, c, fmt.Sprintf("observe/%x", int64(s2.Lease())))
	if err := e1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done2; err != nil {
		t.Fatal(err)
	}
	expectObserved(t, obs, "c")
	stop()
	for range obs {
	}
}

func expectObserved(t *testing.T, obs <-chan *client.GetResponse, want string) {
	t.Helper()
	resp, ok := <-obs
	if !ok {
		t.Fatalf("observe channel closed, want %q", want)
	}
	if got := string(resp.Kvs[0].Value); got != want {
		t.Fatalf("observed %q, want %q", got, want)
	}
	if resp.Header.Revision < resp.Kvs[0].ModRevision {
		t.Fatalf("observed header revision %d before the value's mod revision %d", resp.Header.Revision, resp.Kvs[0].ModRevision)
	}
}
