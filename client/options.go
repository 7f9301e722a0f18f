package client

// prefixEnd is the end of the range of keys starting with key: key with its
// last byte below 0xff incremented, or "\x00" (to the end of the keyspace)
// when there is none.
func prefixEnd(key []byte) []byte {
	end := append([]byte(nil), key...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0}
}

// WithPrefix selects every key starting with the Op's key. An empty key
// selects all keys.
func WithPrefix() OpOption {
	return func(op *Op) {
		if len(op.key) == 0 {
			op.key, op.end = []byte{0}, []byte{0}
			return
		}
		op.end = prefixEnd(op.key)
	}
}

// WithRange selects the keys in [key, end).
func WithRange(end string) OpOption { return func(op *Op) { op.end = []byte(end) } }

// WithFromKey selects every key >= the Op's key.
func WithFromKey() OpOption {
	return func(op *Op) {
		if len(op.key) == 0 {
			op.key = []byte{0}
		}
		op.end = []byte{0}
	}
}

// WithRev reads at revision rev, or watches from it.
func WithRev(rev int64) OpOption { return func(op *Op) { op.rev = rev } }

// WithLimit returns at most n keys.
func WithLimit(n int64) OpOption { return func(op *Op) { op.limit = n } }

// WithSort sorts the result.
func WithSort(target SortTarget, order SortOrder) OpOption {
	return func(op *Op) { op.sortTarget, op.sortOrder = target, order }
}

// WithSerializable reads from the serving member without a quorum round.
func WithSerializable() OpOption { return func(op *Op) { op.serializable = true } }

// WithKeysOnly returns keys without values.
func WithKeysOnly() OpOption { return func(op *Op) { op.keysOnly = true } }

// WithCountOnly returns only the count.
func WithCountOnly() OpOption { return func(op *Op) { op.countOnly = true } }

// WithMinModRev, WithMaxModRev, WithMinCreateRev and WithMaxCreateRev filter
// a Get by revision.
func WithMinModRev(rev int64) OpOption    { return func(op *Op) { op.minModRev = rev } }
func WithMaxModRev(rev int64) OpOption    { return func(op *Op) { op.maxModRev = rev } }
func WithMinCreateRev(rev int64) OpOption { return func(op *Op) { op.minCreateRev = rev } }
func WithMaxCreateRev(rev int64) OpOption { return func(op *Op) { op.maxCreate = rev } }

// WithPrevKV returns (or, for a watch, sends along) the previous key-value.
func WithPrevKV() OpOption { return func(op *Op) { op.prevKV = true } }

// WithLease attaches a Put's key to lease id.
func WithLease(id LeaseID) OpOption { return func(op *Op) { op.leaseID = id } }

// WithIgnoreValue updates a key keeping its value.
func WithIgnoreValue() OpOption { return func(op *Op) { op.ignoreValue = true } }

// WithIgnoreLease updates a key keeping its lease.
func WithIgnoreLease() OpOption { return func(op *Op) { op.ignoreLease = true } }

// WithProgressNotify asks the server for periodic progress notifications on
// an idle watch.
func WithProgressNotify() OpOption { return func(op *Op) { op.progressNotify = true } }

// WithCreatedNotify delivers the watch's "created" response.
func WithCreatedNotify() OpOption { return func(op *Op) { op.createdNotify = true } }

// WithFilterPut and WithFilterDelete drop put or delete events of a watch.
func WithFilterPut() OpOption    { return func(op *Op) { op.filterPut = true } }
func WithFilterDelete() OpOption { return func(op *Op) { op.filterDelete = true } }

// WithFragment lets the server split large watch responses; the client
// joins them again.
func WithFragment() OpOption { return func(op *Op) { op.fragment = true } }

// GetPrefixRangeEnd is the range end that WithPrefix uses for prefix.
func GetPrefixRangeEnd(prefix string) string { return string(prefixEnd([]byte(prefix))) }
