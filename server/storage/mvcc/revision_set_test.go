package mvcc

import (
	"math/rand/v2"
	"testing"
)

// TestRevisionSetAnswersAnyQueryOrder fills a set in a shuffled order and asks
// about every revision of a range (members and non-members) ascending, as the
// compaction does, then in random order, and compares with a map.
func TestRevisionSetAnswersAnyQueryOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[Revision]bool{}
	set := &revisionSet{}
	var all []Revision
	for main := int64(1); main <= 300; main++ {
		for sub := int64(0); sub < 3; sub++ {
			r := Revision{Main: main, Sub: sub}
			all = append(all, r)
			if rng.IntN(3) == 0 {
				want[r] = true
			}
		}
	}
	for _, i := range rng.Perm(len(all)) {
		if want[all[i]] {
			set.add(all[i])
		}
	}
	set.seal()
	if set.len() != len(want) {
		t.Fatalf("len %d, want %d", set.len(), len(want))
	}
	ask := func(order string, revs []Revision) {
		for _, r := range revs {
			if got := set.has(r); got != want[r] {
				t.Fatalf("%s: has(%v) = %v, want %v", order, r, got, want[r])
			}
		}
	}
	ask("ascending", all)
	ask("ascending again", all)
	shuffled := append([]Revision{}, all...)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	ask("random", shuffled)
	ask("beyond the last", []Revision{{Main: 301}, {Main: 0}, {Main: 1000, Sub: 5}})
}

func TestRevisionSetEmpty(t *testing.T) {
	set := (&revisionSet{}).seal()
	if set.len() != 0 || set.has(Revision{Main: 1}) {
		t.Fatal("an empty set holds nothing")
	}
}
