package client

import (
	"context"
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

type txn struct {
	kv  *kv
	ctx context.Context

	mu                sync.Mutex
	cif, cthen, celse bool
	cmps              []Cmp
	thenOps, elseOps  []Op
}

func (t *txn) If(cs ...Cmp) Txn {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.cif:
		panic("client: Txn.If called twice")
	case t.cthen:
		panic("client: Txn.If called after Then")
	case t.celse:
		panic("client: Txn.If called after Else")
	}
	t.cif = true
	t.cmps = cs
	return t
}

func (t *txn) Then(ops ...Op) Txn {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cthen {
		panic("client: Txn.Then called twice")
	}
	if t.celse {
		panic("client: Txn.Then called after Else")
	}
	t.cthen = true
	t.thenOps = ops
	return t
}

func (t *txn) Else(ops ...Op) Txn {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.celse {
		panic("client: Txn.Else called twice")
	}
	t.celse = true
	t.elseOps = ops
	return t
}

func (t *txn) Commit() (*TxnResponse, error) {
	t.mu.Lock()
	op := OpTxn(t.cmps, t.thenOps, t.elseOps)
	t.mu.Unlock()
	r, err := t.kv.Do(t.ctx, op)
	return r.txn, err
}
