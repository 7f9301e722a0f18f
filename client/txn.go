package client

import (
	"context"
	"fmt"
	"sync"
)

// Txn is a transaction: If the comparisons all hold, Then's ops run,
// otherwise Else's. Commit sends it. If must come before Then and Else, and
// each may be called once; breaking that order panics, as in clientv3.
type Txn interface {
	If(cs ...Cmp) Txn
	Then(ops ...Op) Txn
	Else(ops ...Op) Txn
	Commit() (*TxnResponse, error)
}

// txnPart names the parts of a Txn in the order they may be given.
type txnPart int

const (
	partNone txnPart = iota
	partIf
	partThen
	partElse
)

func (p txnPart) String() string {
	return [...]string{"", "If", "Then", "Else"}[p]
}

type txn struct {
	kv  *kv
	ctx context.Context

	mu      sync.Mutex
	last    txnPart // the latest part given so far
	cmps    []Cmp
	thenOps []Op
	elseOps []Op
}

// advance records that part p is being given and stores it with set, under
// the txn's lock; it panics if p comes twice or after a part that must
// follow it.
func (t *txn) advance(p txnPart, set func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.last == p:
		panic(fmt.Sprintf("client: Txn.%v called twice", p))
	case t.last > p:
		panic(fmt.Sprintf("client: Txn.%v called after %v", p, t.last))
	}
	t.last = p
	set()
}

func (t *txn) If(cs ...Cmp) Txn {
	t.advance(partIf, func() { t.cmps = cs })
	return t
}

func (t *txn) Then(ops ...Op) Txn {
	t.advance(partThen, func() { t.thenOps = ops })
	return t
}

func (t *txn) Else(ops ...Op) Txn {
	t.advance(partElse, func() { t.elseOps = ops })
	return t
}

func (t *txn) Commit() (*TxnResponse, error) {
	t.mu.Lock()
	op := OpTxn(t.cmps, t.thenOps, t.elseOps)
	t.mu.Unlock()
	r, err := t.kv.Do(t.ctx, op)
	return r.txn, err
}
