package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
)

// keySpec describes the keys a write workload touches: key-space-size
// distinct keys of key-size bytes each, chosen at random or in order.
type keySpec struct {
	size       int
	space      int64
	sequential bool
}

func (k *keySpec) register(fs *flag.FlagSet) {
	fs.IntVar(&k.size, "key-size", 8, "key size in bytes")
	fs.Int64Var(&k.space, "key-space-size", 1, "number of distinct keys")
}

func (k keySpec) validate() error {
	if k.size < 1 {
		return fmt.Errorf("%w: --key-size must be at least 1", errUsage)
	}
	if k.space < 1 {
		return fmt.Errorf("%w: --key-space-size must be at least 1", errUsage)
	}
	// A key of size bytes can name 256^size distinct keys; asking for more
	// would silently wrap and write fewer keys than requested.
	if k.size < 8 && k.space > int64(1)<<(8*k.size) {
		return fmt.Errorf("%w: --key-space-size %d does not fit in --key-size %d bytes", errUsage, k.space, k.size)
	}
	return nil
}

// encode returns key number index as a big-endian number right-aligned in
// k.size bytes, so distinct indexes always give distinct keys.
func (k keySpec) encode(index int64) []byte {
	key := make([]byte, k.size)
	for i := len(key) - 1; i >= 0 && index > 0; i-- {
		key[i] = byte(index)
		index >>= 8
	}
	return key
}

// picker returns the function that maps a request's sequence number to a
// key index for one client. Random picks use a per-client generator with a
// fixed seed, so runs are repeatable and clients need no shared lock.
func (k keySpec) picker(client int) func(seq int64) int64 {
	if k.sequential {
		return func(seq int64) int64 { return seq % k.space }
	}
	rng := rand.New(rand.NewPCG(uint64(client), 0xcafe))
	return func(int64) int64 { return rng.Int64N(k.space) }
}

// covering returns the key and range end that cover every key of the key
// space: the single key, or [key 0, key space) since keys are fixed-width
// big-endian numbers and so sort in numeric order.
func (k keySpec) covering() (key, end []byte) {
	key = k.encode(0)
	if k.space == 1 {
		return key, nil
	}
	if k.size < 8 && k.space == int64(1)<<(8*k.size) {
		return key, []byte{0} // every key of this size: all keys >= key
	}
	return key, k.encode(k.space)
}
