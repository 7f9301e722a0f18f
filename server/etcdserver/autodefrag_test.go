package etcdserver

import (
	"testing"
	"time"
)

func TestDefragTurnPutsTheLeaderLast(t *testing.T) {
	members := []uint64{30, 10, 20}
	tests := []struct {
		self, leader uint64
		want         turn
		ok           bool
	}{
		{self: 10, leader: 20, want: turn{0, 3}, ok: true},
		{self: 30, leader: 20, want: turn{1, 3}, ok: true},
		{self: 20, leader: 20, want: turn{2, 3}, ok: true},
		{self: 30, leader: 30, want: turn{2, 3}, ok: true},
		{self: 10, leader: 30, want: turn{0, 3}, ok: true},
		{self: 40, leader: 30, want: turn{-1, 3}, ok: false},
	}
	for _, tt := range tests {
		got, ok := defragTurn(tt.self, tt.leader, members)
		if got != tt.want || ok != tt.ok {
			t.Errorf("defragTurn(%d, leader %d) = %v %v, want %v %v", tt.self, tt.leader, got, ok, tt.want, tt.ok)
		}
	}
}

// TestOneMemberInTurnAtATime walks a period in small steps: at every
// instant exactly one of three members is in its turn, each gets one
// contiguous share, and the leader's comes last.
func TestOneMemberInTurnAtATime(t *testing.T) {
	p := reclaimPolicy{freePercent: 50, interval: 90 * time.Second}
	members := []uint64{1, 2, 3}
	const leader = 2
	start := time.Unix(0, 0).Add(900 * time.Second) // a period boundary
	var order []uint64
	for step := time.Duration(0); step < p.interval; step += 500 * time.Millisecond {
		now := start.Add(step)
		var inTurn []uint64
		for _, id := range members {
			tr, _ := defragTurn(id, leader, members)
			if p.inTurn(now, tr) {
				inTurn = append(inTurn, id)
			}
		}
		if len(inTurn) != 1 {
			t.Fatalf("at +%v members %v are in turn, want exactly one", step, inTurn)
		}
		if len(order) == 0 || order[len(order)-1] != inTurn[0] {
			order = append(order, inTurn[0])
		}
		if p.period(now) != p.period(start) {
			t.Fatalf("+%v is in another period", step)
		}
	}
	if want := []uint64{1, 3, 2}; len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Fatalf("turns in the period: %v, want %v (leader last)", order, want)
	}
}

func TestWorthIt(t *testing.T) {
	const mb = 1 << 20
	p := reclaimPolicy{freePercent: 50, minFree: 100 * mb, interval: time.Minute}
	tests := []struct {
		name       string
		size, free int64
		want       bool
	}{
		{"half free, enough bytes", 400 * mb, 200 * mb, true},
		{"mostly free", 1000 * mb, 990 * mb, true},
		{"under half free", 400 * mb, 199 * mb, false},
		{"half free but too few bytes", 150 * mb, 75 * mb, false},
		{"nothing free", 400 * mb, 0, false},
	}
	for _, tt := range tests {
		if got := p.worthIt(tt.size, tt.free); got != tt.want {
			t.Errorf("%s: worthIt(%d, %d) = %v, want %v", tt.name, tt.size, tt.free, got, tt.want)
		}
	}
	if (reclaimPolicy{freePercent: 0, interval: time.Minute}).worthIt(1000*mb, 1000*mb) {
		t.Error("free percent 0 must turn reclamation off")
	}
}

func TestCheckEveryIsBounded(t *testing.T) {
	for _, tt := range []struct{ interval, want time.Duration }{
		{time.Second, 50 * time.Millisecond},
		{time.Minute, 600 * time.Millisecond},
		{time.Hour, 10 * time.Second},
	} {
		if got := (reclaimPolicy{interval: tt.interval}).checkEvery(); got != tt.want {
			t.Errorf("checkEvery(%v) = %v, want %v", tt.interval, got, tt.want)
		}
	}
}
