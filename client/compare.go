package client

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// Cmp is one condition of a Txn. Build it with Compare and one of Value,
// Version, CreateRevision, ModRevision or LeaseValue.
type Cmp struct {
	target   pb.Compare_CompareTarget
	result   pb.Compare_CompareResult
	key, end []byte
	value    []byte
	number   int64
}

// Value compares the value of key.
func Value(key string) Cmp { return Cmp{target: pb.Compare_VALUE, key: []byte(key)} }

// Version compares the version of key (0: it does not exist).
func Version(key string) Cmp { return Cmp{target: pb.Compare_VERSION, key: []byte(key)} }

// CreateRevision compares the revision that created key.
func CreateRevision(key string) Cmp { return Cmp{target: pb.Compare_CREATE, key: []byte(key)} }

// ModRevision compares the revision that last modified key.
func ModRevision(key string) Cmp { return Cmp{target: pb.Compare_MOD, key: []byte(key)} }

// LeaseValue compares the lease attached to key.
func LeaseValue(key string) Cmp { return Cmp{target: pb.Compare_LEASE, key: []byte(key)} }

var cmpResults = map[string]pb.Compare_CompareResult{
	"=": pb.Compare_EQUAL, "!=": pb.Compare_NOT_EQUAL,
	">": pb.Compare_GREATER, "<": pb.Compare_LESS,
}

// Compare completes cmp with an operator ("=", "!=", ">", "<") and the
// value to compare with: a string for Value, an integer for the revisions
// and Version, a LeaseID (or integer) for LeaseValue. Like clientv3 it
// panics on an unknown operator or a value of the wrong type, which are
// programming errors.
func Compare(cmp Cmp, op string, v any) Cmp {
	result, ok := cmpResults[op]
	if !ok {
		panic(fmt.Sprintf("client: unknown compare operator %q", op))
	}
	cmp.result = result
	if cmp.target == pb.Compare_VALUE {
		s, ok := v.(string)
		if !ok {
			panic(fmt.Sprintf("client: Value compares with a string, not %T", v))
		}
		cmp.value = []byte(s)
		return cmp
	}
	cmp.number = toInt64(v)
	return cmp
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case int32:
		return int64(n)
	case uint:
		return int64(n)
	case uint64:
		return int64(n)
	case LeaseID:
		return int64(n)
	}
	panic(fmt.Sprintf("client: cannot compare with %T", v))
}

// WithRange applies the comparison to every key in [key, end).
func (cmp Cmp) WithRange(end string) Cmp {
	cmp.end = []byte(end)
	return cmp
}

// WithPrefix applies the comparison to every key with the key as prefix.
func (cmp Cmp) WithPrefix() Cmp {
	cmp.end = prefixEnd(cmp.key)
	return cmp
}

// KeyBytes is the compared key.
func (cmp Cmp) KeyBytes() []byte { return cmp.key }

func (cmp Cmp) proto() *pb.Compare {
	c := &pb.Compare{Target: cmp.target, Result: cmp.result, Key: cmp.key, RangeEnd: cmp.end}
	switch cmp.target {
	case pb.Compare_VALUE:
		c.TargetUnion = &pb.Compare_Value{Value: cmp.value}
	case pb.Compare_VERSION:
		c.TargetUnion = &pb.Compare_Version{Version: cmp.number}
	case pb.Compare_CREATE:
		c.TargetUnion = &pb.Compare_CreateRevision{CreateRevision: cmp.number}
	case pb.Compare_MOD:
		c.TargetUnion = &pb.Compare_ModRevision{ModRevision: cmp.number}
	case pb.Compare_LEASE:
		c.TargetUnion = &pb.Compare_Lease{Lease: cmp.number}
	}
	return c
}
