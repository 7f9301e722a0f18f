package main

import "testing"

func TestTxnMixedSplit(t *testing.T) {
	tests := []struct {
		ratio    float64
		min, max int64 // planned reads among 10000 txns
	}{
		{ratio: 0, min: 0, max: 0},
		{ratio: 1, min: 4850, max: 5150},
		{ratio: 3, min: 7350, max: 7650},
		{ratio: 1e9, min: 10000, max: 10000},
	}
	for _, tt := range tests {
		c := &txnMixedConfig{total: 10000, rwRatio: tt.ratio}
		got := c.plannedReads()
		if got < tt.min || got > tt.max {
			t.Errorf("ratio %g: %d reads planned, want %d..%d", tt.ratio, got, tt.min, tt.max)
		}
		// The split is a function of the sequence number alone.
		if again := c.plannedReads(); again != got {
			t.Errorf("ratio %g: %d reads, then %d", tt.ratio, got, again)
		}
	}
}

func TestTxnMixedRequests(t *testing.T) {
	c := &txnMixedConfig{total: 100, rwRatio: 1, keys: keySpec{size: 2, space: 10}, valSize: 4, limit: 7, serializable: true}
	next := c.source(0)
	var reads, writes int
	for seq := range c.total {
		req, isRead := next(seq)
		if isRead != c.isRead(seq) || len(req.GetSuccess()) != 1 {
			t.Fatalf("seq %d: %v (read %v)", seq, req, isRead)
		}
		op := req.GetSuccess()[0]
		if isRead {
			reads++
			r := op.GetRequestRange()
			if string(r.GetKey()) != "\x00\x00" || string(r.GetRangeEnd()) != "\x00\x0a" || r.GetLimit() != 7 || !r.GetSerializable() {
				t.Errorf("read %d = %v, want [key 0, key 10) limit 7 serializable", seq, r)
			}
			continue
		}
		writes++
		p := op.GetRequestPut()
		if len(p.GetKey()) != 2 || p.GetKey()[1] >= 10 || len(p.GetValue()) != 4 {
			t.Errorf("write %d = %v, want a 2-byte key below 10 and a 4-byte value", seq, p)
		}
	}
	if reads == 0 || writes == 0 {
		t.Errorf("%d reads and %d writes, want both", reads, writes)
	}
	c.endRange = "zz"
	for seq := range c.total {
		if req, isRead := c.source(0)(seq); isRead {
			if end := string(req.GetSuccess()[0].GetRequestRange().GetRangeEnd()); end != "zz" {
				t.Errorf("--end-range zz gave range end %q", end)
			}
			break
		}
	}
}
