package concurrency

import (
	"context"
	"math"

	"github.com/cairnkv/cairn/client"
)

// STM is software transactional memory over the store: the function given
// to NewSTM reads and writes through it, and its writes are committed in
// one transaction that succeeds only if the isolation level's conditions
// still hold; otherwise the function runs again.
type STM interface {
	// Get returns the value of the first of keys in the write set, or else
	// of keys[0] as read from the store, and adds the keys to the read set
	// (fetching them together). An error aborts the transaction: Get then
	// does not return and NewSTM returns the error.
	Get(keys ...string) string
	// Put buffers a write of val to key.
	Put(key, val string, opts ...client.OpOption)
	// Rev returns key's mod revision as read (0 if it does not exist).
	Rev(key string) int64
	// Del buffers a delete of key.
	Del(key string)

	// commit sends the writes; nil means a conflict (run again).
	commit() *client.TxnResponse
	reset()
}

// Isolation is an STM's isolation level.
type Isolation int

const (
	// SerializableSnapshot reads every key at the revision of the first
	// read and commits only if neither the keys read nor the keys written
	// changed since: serializable, and no write is lost. The default.
	SerializableSnapshot Isolation = iota
	// Serializable reads every key at the revision of the first read and
	// commits only if the keys read did not change.
	Serializable
	// RepeatableReads reads each key once (at whatever revision) and
	// commits only if the keys read did not change.
	RepeatableReads
	// ReadCommitted reads each key once and always commits.
	ReadCommitted
)

// stmAbort carries an error out of the user's function through panic.
type stmAbort struct{ err error }

type stmOptions struct {
	iso      Isolation
	ctx      context.Context
	prefetch []string
}

// STMOption configures NewSTM.
type STMOption func(*stmOptions)

// WithIsolation sets the isolation level.
func WithIsolation(lvl Isolation) STMOption { return func(o *stmOptions) { o.iso = lvl } }

// WithAbortContext sets the context of the STM's requests; when it ends,
// the transaction is aborted with its error.
func WithAbortContext(ctx context.Context) STMOption { return func(o *stmOptions) { o.ctx = ctx } }

// WithPrefetch reads keys in one request before every run of the function,
// saving a round trip per key the function is known to read.
func WithPrefetch(keys ...string) STMOption {
	return func(o *stmOptions) { o.prefetch = append(o.prefetch, keys...) }
}

// NewSTM runs apply in a transaction (SerializableSnapshot unless
// WithIsolation says otherwise) until it commits or fails. It returns the
// committing transaction's response, or apply's or a request's error.
func NewSTM(c *client.Client, apply func(STM) error, opts ...STMOption) (*client.TxnResponse, error) {
	o := stmOptions{ctx: c.Ctx()}
	for _, opt := range opts {
		opt(&o)
	}
	if len(o.prefetch) > 0 {
		run := apply
		apply = func(s STM) error {
			s.Get(o.prefetch...)
			return run(s)
		}
	}
	return runSTM(newSTM(c, o), apply)
}

// NewSTMRepeatable runs apply with RepeatableReads isolation.
//
// Deprecated: use NewSTM with WithAbortContext and WithIsolation.
func NewSTMRepeatable(ctx context.Context, c *client.Client, apply func(STM) error) (*client.TxnResponse, error) {
	return NewSTM(c, apply, WithAbortContext(ctx), WithIsolation(RepeatableReads))
}

// NewSTMSerializable runs apply with Serializable isolation.
//
// Deprecated: use NewSTM with WithAbortContext and WithIsolation.
func NewSTMSerializable(ctx context.Context, c *client.Client, apply func(STM) error) (*client.TxnResponse, error) {
	return NewSTM(c, apply, WithAbortContext(ctx), WithIsolation(Serializable))
}

// NewSTMReadCommitted runs apply with ReadCommitted isolation.
//
// Deprecated: use NewSTM with WithAbortContext and WithIsolation.
func NewSTMReadCommitted(ctx context.Context, c *client.Client, apply func(STM) error) (*client.TxnResponse, error) {
	return NewSTM(c, apply, WithAbortContext(ctx), WithIsolation(ReadCommitted))
}

func newSTM(c *client.Client, o stmOptions) STM {
	base := stm{client: c, ctx: o.ctx}
	switch o.iso {
	case SerializableSnapshot:
		s := &snapshotSTM{stm: base, checkWrites: true}
		s.conditions = s.snapshotConditions
		return s
	case Serializable:
		s := &snapshotSTM{stm: base}
		s.conditions = s.snapshotConditions
		return s
	case RepeatableReads:
		base.readOpts = []client.OpOption{client.WithSerializable()}
		s := &base
		s.conditions = func() []client.Cmp { return s.reads.unchanged() }
		return s
	case ReadCommitted:
		base.readOpts = []client.OpOption{client.WithSerializable()}
		s := &base
		s.conditions = func() []client.Cmp { return nil }
		return s
	}
	panic("concurrency: unknown STM isolation level")
}

// runSTM runs apply until its transaction commits, apply fails or a request
// fails (reported by a stmAbort panic). Other panics are apply's own and
// pass through.
func runSTM(s STM, apply func(STM) error) (resp *client.TxnResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			abort, ok := r.(stmAbort)
			if !ok {
				panic(r)
			}
			resp, err = nil, abort.err
		}
	}()
	for {
		s.reset()
		if err := apply(s); err != nil {
			return nil, err
		}
		if resp := s.commit(); resp != nil {
			return resp, nil
		}
	}
}

// readSet holds the responses of the reads of one run, by key.
type readSet map[string]*client.GetResponse

// unchanged is a comparison per key read that holds while the key's mod
// revision is still the one read (0: still absent).
func (rs readSet) unchanged() []client.Cmp {
	cmps := make([]client.Cmp, 0, len(rs))
	for key, resp := range rs {
		var rev int64
		if len(resp.Kvs) > 0 {
			rev = resp.Kvs[0].ModRevision
		}
		cmps = append(cmps, client.Compare(client.ModRevision(key), "=", rev))
	}
	return cmps
}

// firstRevision is the lowest store revision any read saw.
func (rs readSet) firstRevision() int64 {
	first := int64(math.MaxInt64 - 1)
	for _, resp := range rs {
		first = min(first, resp.Header.Revision)
	}
	return first
}

// store records the responses of a transaction of gets, one per key.
func (rs readSet) store(keys []string, resp *client.TxnResponse) {
	for i, r := range resp.Responses {
		rs[keys[i]] = (*client.GetResponse)(r.GetResponseRange())
	}
}

// pendingWrite is a buffered Put or Delete.
type pendingWrite struct {
	val string
	op  client.Op
}

// writeSet holds the buffered writes of one run, by key.
type writeSet map[string]pendingWrite

func (ws writeSet) first(keys []string) (pendingWrite, bool) {
	for _, key := range keys {
		if w, ok := ws[key]; ok {
			return w, true
		}
	}
	return pendingWrite{}, false
}

func (ws writeSet) ops() []client.Op {
	ops := make([]client.Op, 0, len(ws))
	for _, w := range ws {
		ops = append(ops, w.op)
	}
	return ops
}

// untouchedSince holds while no written key was modified at or after rev.
func (ws writeSet) untouchedSince(rev int64) []client.Cmp {
	cmps := make([]client.Cmp, 0, len(ws))
	for key := range ws {
		cmps = append(cmps, client.Compare(client.ModRevision(key), "<", rev))
	}
	return cmps
}

// stm reads each key once (RepeatableReads, ReadCommitted) and commits its
// writes if conditions hold.
type stm struct {
	client     *client.Client
	ctx        context.Context
	reads      readSet
	writes     writeSet
	readOpts   []client.OpOption
	conditions func() []client.Cmp
}

func (s *stm) Get(keys ...string) string {
	if w, ok := s.writes.first(keys); ok {
		return w.val
	}
	return valueOf(s.fetch(keys))
}

func (s *stm) Put(key, val string, opts ...client.OpOption) {
	s.writes[key] = pendingWrite{val: val, op: client.OpPut(key, val, opts...)}
}

func (s *stm) Del(key string) { s.writes[key] = pendingWrite{op: client.OpDelete(key)} }

func (s *stm) Rev(key string) int64 {
	if resp := s.fetch([]string{key}); resp != nil && len(resp.Kvs) > 0 {
		return resp.Kvs[0].ModRevision
	}
	return 0
}

// fetch reads the keys not read yet in one transaction and returns the
// response for keys[0].
func (s *stm) fetch(keys []string) *client.GetResponse {
	if len(keys) == 0 {
		return nil
	}
	var missing []string
	var ops []client.Op
	for _, key := range keys {
		if _, ok := s.reads[key]; !ok {
			missing = append(missing, key)
			ops = append(ops, client.OpGet(key, s.readOpts...))
		}
	}
	if len(ops) > 0 {
		resp, err := s.client.Txn(s.ctx).Then(ops...).Commit()
		if err != nil {
			panic(stmAbort{err})
		}
		s.reads.store(missing, resp)
	}
	return s.reads[keys[0]]
}

func (s *stm) commit() *client.TxnResponse {
	resp, err := s.client.Txn(s.ctx).If(s.conditions()...).Then(s.writes.ops()...).Commit()
	if err != nil {
		panic(stmAbort{err})
	}
	if resp.Succeeded {
		return resp
	}
	return nil
}

func (s *stm) reset() {
	s.reads = readSet{}
	s.writes = writeSet{}
}

// snapshotSTM reads every key at the revision of the run's first read
// (Serializable, SerializableSnapshot). A conflicting commit reads the keys
// afresh in the same request, so the next run starts without a round trip.
type snapshotSTM struct {
	stm
	checkWrites bool    // SerializableSnapshot: writes must not be lost either
	prefetched  readSet // reads carried over from the failed commit
}

func (s *snapshotSTM) snapshotConditions() []client.Cmp {
	cmps := s.reads.unchanged()
	if s.checkWrites {
		cmps = append(cmps, s.writes.untouchedSince(s.reads.firstRevision()+1)...)
	}
	return cmps
}

func (s *snapshotSTM) Get(keys ...string) string {
	if len(keys) == 0 {
		return ""
	}
	if w, ok := s.writes.first(keys); ok {
		return w.val
	}
	firstRead := len(s.reads) == 0
	for _, key := range keys {
		if resp, ok := s.prefetched[key]; ok {
			delete(s.prefetched, key)
			s.reads[key] = resp
		}
	}
	resp := s.fetch(keys)
	if firstRead {
		// The run's snapshot is the revision of its first read.
		s.readOpts = []client.OpOption{client.WithRev(resp.Header.Revision), client.WithSerializable()}
	}
	return valueOf(resp)
}

func (s *snapshotSTM) Rev(key string) int64 {
	s.Get(key)
	return s.stm.Rev(key)
}

func (s *snapshotSTM) commit() *client.TxnResponse {
	keys := make([]string, 0, len(s.reads))
	gets := make([]client.Op, 0, len(s.reads))
	for key := range s.reads {
		keys = append(keys, key)
		gets = append(gets, client.OpGet(key))
	}
	resp, err := s.client.Txn(s.ctx).If(s.conditions()...).Then(s.writes.ops()...).Else(gets...).Commit()
	if err != nil {
		panic(stmAbort{err})
	}
	if resp.Succeeded {
		return resp
	}
	s.reads.store(keys, resp)
	s.prefetched = s.reads
	s.readOpts = nil
	return nil
}

func valueOf(resp *client.GetResponse) string {
	if resp == nil || len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}
