package proxy

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestForwardsLargePayloadIntact(t *testing.T) {
	s := startServer(t, echo)
	p := newProxy(t, s.addr(), 1)
	data := randomBytes(7, 8<<20)
	if err := echoCheck(dial(t, p.Addr()), data); err != nil {
		t.Fatal(err)
	}
	// The echoed EOF is forwarded only after every byte was counted.
	st := p.Stats()
	if st.TxBytes != int64(len(data)) || st.RxBytes != int64(len(data)) {
		t.Fatalf("stats %+v, want %d bytes each way", st, len(data))
	}
	if st.Accepted != 1 || st.TxDropped != 0 || st.RxDropped != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestForwardsToCountingServer(t *testing.T) {
	s := startServer(t, count)
	p := newProxy(t, s.addr(), 1)
	c := dial(t, p.Addr())
	const n = 1 << 20
	for i := 0; i < n; i += 4096 {
		send(t, c, strings.Repeat("x", 4096))
	}
	waitFor(t, "server to count every byte", func() bool { return s.received.Load() == n })
	// The proxy counts a chunk just after writing it, so the server may see
	// it first.
	waitFor(t, "TxBytes to catch up", func() bool { return p.Stats().TxBytes == n })
	if st := p.Stats(); st.Active != 1 || st.Accepted != 1 {
		t.Fatalf("stats %+v, want one connection", st)
	}
}

func TestDelayIsALowerBound(t *testing.T) {
	const d = 80 * time.Millisecond
	for _, tc := range []struct {
		name        string
		delay, undo func(*Proxy)
	}{
		{"tx", func(p *Proxy) { p.DelayTx(d, 0) }, (*Proxy).UndelayTx},
		{"rx", func(p *Proxy) { p.DelayRx(d, 0) }, (*Proxy).UndelayRx},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, echo)
			p := newProxy(t, s.addr(), 1)
			c := dial(t, p.Addr())
			tc.delay(p)
			start := time.Now()
			roundTrip(t, c, "ping")
			if elapsed := time.Since(start); elapsed < d {
				t.Fatalf("round trip took %v, want at least %v", elapsed, d)
			}
			tc.undo(p)
			roundTrip(t, c, "pong")
		})
	}
}

func TestDelayWithJitterPreservesOrder(t *testing.T) {
	s := startServer(t, echo)
	p := newProxy(t, s.addr(), 3)
	c := dial(t, p.Addr())
	p.DelayTx(20*time.Millisecond, 15*time.Millisecond)
	p.DelayRx(10*time.Millisecond, 10*time.Millisecond)
	var want strings.Builder
	start := time.Now()
	for i := range 100 {
		msg := fmt.Sprintf("msg-%03d;", i)
		want.WriteString(msg)
		send(t, c, msg)
	}
	expect(t, c, want.String())
	if elapsed, floor := time.Since(start), 5*time.Millisecond; elapsed < floor {
		t.Fatalf("took %v, want at least %v", elapsed, floor)
	}
}

func TestBlackholeTxDiscardsUntilUndone(t *testing.T) {
	s := startServer(t, count)
	p := newProxy(t, s.addr(), 1)
	c := dial(t, p.Addr())
	p.BlackholeTx()
	send(t, c, "lost")
	waitFor(t, "4 bytes discarded", func() bool { return p.Stats().TxDropped == 4 })
	if got := s.received.Load(); got != 0 {
		t.Fatalf("server received %d bytes through a blackhole", got)
	}
	p.UnblackholeTx()
	send(t, c, "found")
	waitFor(t, "server to receive 5 bytes", func() bool { return s.received.Load() == 5 })
	waitFor(t, "TxBytes=5", func() bool { return p.Stats().TxBytes == 5 })
	if got := p.Stats().TxDropped; got != 4 {
		t.Fatalf("TxDropped=%d, want 4", got)
	}
}

func TestBlackholeRxDiscardsUntilUndone(t *testing.T) {
	s := startServer(t, echo)
	p := newProxy(t, s.addr(), 1)
	c := dial(t, p.Addr())
	p.BlackholeRx()
	send(t, c, "lost")
	waitFor(t, "echo to be discarded", func() bool { return p.Stats().RxDropped == 4 })
	p.UnblackholeRx()
	// "lost" would arrive first had it not been discarded.
	roundTrip(t, c, "found")
	waitFor(t, "TxBytes=9 RxBytes=5", func() bool {
		st := p.Stats()
		return st.TxBytes == 9 && st.RxBytes == 5
	})
}

func TestBlackholeAppliesToNewConnections(t *testing.T) {
	s := startServer(t, echo)
	p := newProxy(t, s.addr(), 1)
	p.BlackholeTx()
	c := dial(t, p.Addr())
	send(t, c, "x")
	waitFor(t, "byte discarded", func() bool { return p.Stats().TxDropped == 1 })
	p.UnblackholeTx()
	roundTrip(t, c, "y")
}

func TestDropIsSeeded(t *testing.T) {
	const (
		seed = 42
		prob = 0.3
		n    = 200
	)
	s := startServer(t, echo)
	p := newProxy(t, s.addr(), seed)
	c := dial(t, p.Addr())
	p.DropTx(prob)
	// One byte per chunk: wait for each to be forwarded or dropped before
	// sending the next, so every byte costs exactly one draw.
	for i := range n {
		send(t, c, string(rune('a'+i%26)))
		waitFor(t, "byte handled", func() bool {
			st := p.Stats()
			return st.TxBytes+st.TxDropped == int64(i+1)
		})
	}
	replay := rand.New(rand.NewPCG(seed, seed))
	var want []byte
	for i := range n {
		if replay.Float64() >= prob {
			want = append(want, byte('a'+i%26))
		}
	}
	if dropped := n - len(want); dropped == 0 || dropped == n {
		t.Fatalf("seed %d dropped %d of %d; pick a seed that exercises both outcomes", seed, dropped, n)
	}
	expect(t, c, string(want))
	if st := p.Stats(); st.TxDropped != int64(n-len(want)) {
		t.Fatalf("TxDropped=%d, want %d", st.TxDropped, n-len(want))
	}
	p.UndropTx()
	roundTrip(t, c, "intact")
}

func TestDropRx(t *testing.T) {
	s := startServer(t, echo)
	p := newProxy(t, s.addr(), 1)
	c := dial(t, p.Addr())
	p.DropRx(1)
	send(t, c, "gone")
	waitFor(t, "echo dropped", func() bool { return p.Stats().RxDropped == 4 })
	p.DropRx(0)
	roundTrip(t, c, "back")
}

func TestPauseAcceptQueuesConnections(t *testing.T) {
	s := startServer(t, echo)
	p := newProxy(t, s.addr(), 1)
	old := dial(t, p.Addr())
	roundTrip(t, old, "before")
	p.PauseAccept()
	// The kernel completes handshakes, but nothing is forwarded.
	c1, c2 := dial(t, p.Addr()), dial(t, p.Addr())
	send(t, c1, "one")
	send(t, c2, "two")
	expectSilence(t, c1)
	roundTrip(t, old, "established still work")
	if st := p.Stats(); st.Accepted != 1 {
		t.Fatalf("accepted %d while paused, want 1", st.Accepted)
	}
	p.UnpauseAccept()
	expect(t, c1, "one")
	expect(t, c2, "two")
	if st := p.Stats(); st.Accepted != 3 || st.Active != 3 {
		t.Fatalf("stats %+v, want 3 accepted and active", st)
	}
}

func TestResetConnections(t *testing.T) {
	s := startServer(t, echo)
	p := newProxy(t, s.addr(), 1)
	c := dial(t, p.Addr())
	roundTrip(t, c, "hello")
	p.ResetConnections()
	expectClosed(t, c)
	waitFor(t, "no active connections", func() bool { return p.Stats().Active == 0 })
	roundTrip(t, dial(t, p.Addr()), "again")
	if st := p.Stats(); st.Accepted != 2 || st.Active != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestResetListener(t *testing.T) {
	s := startServer(t, echo)
	p := newProxy(t, s.addr(), 1)
	addr := p.Addr()
	c := dial(t, addr)
	roundTrip(t, c, "hello")
	if err := p.ResetListener(); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c)
	if p.Addr() != addr {
		t.Fatalf("address changed from %s to %s", addr, p.Addr())
	}
	roundTrip(t, dial(t, addr), "again")
}

func TestModify(t *testing.T) {
	s := startServer(t, echo)
	p := newProxy(t, s.addr(), 1)
	c := dial(t, p.Addr())
	p.ModifyTx(bytes.ToUpper)
	send(t, c, "abc")
	expect(t, c, "ABC")
	p.ModifyRx(func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("X"), []byte("y")) })
	send(t, c, "xax")
	expect(t, c, "yAy")
	p.ModifyTx(nil)
	p.ModifyRx(nil)
	roundTrip(t, c, "plain")
}

func TestConcurrentConnections(t *testing.T) {
	s := startServer(t, echo)
	p := newProxy(t, s.addr(), 1)
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		c := dial(t, p.Addr())
		go func() { errs <- echoCheck(c, randomBytes(uint64(i), 256<<10)) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if st := p.Stats(); st.Accepted != n || st.TxBytes != n*256<<10 {
		t.Fatalf("stats %+v", st)
	}
}

func TestUnreachableTargetClosesClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close()
	p := newProxy(t, target, 1)
	expectClosed(t, dial(t, p.Addr()))
}

func TestCloseLeaksNothing(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	s := startServer(t, echo)
	p := newProxy(t, s.addr(), 1)
	busy := dial(t, p.Addr())
	roundTrip(t, busy, "up")
	p.DelayTx(time.Hour, 0)
	send(t, busy, "stuck in the delay queue")
	p.PauseAccept()
	held := dial(t, p.Addr()) // accepted, then held by the pause
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, busy)
	expectClosed(t, held)
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := p.ResetListener(); err != ErrClosed {
		t.Fatalf("ResetListener after Close: %v, want ErrClosed", err)
	}
	s.close()
	goleak.VerifyNone(t, ignore)
}
