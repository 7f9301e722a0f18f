package robustness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

const (
	keyPrefix = "key/"
	leaseTTL  = 600 // seconds: no lease may expire during a run
)

// record is one completed request.
type record struct {
	client    int
	in        *input
	out       *output
	call, ret int64 // test clock; ret is meaningless when out.unknown
	// serializable marks a serializable get: it is not part of the
	// linearizable history and is checked on its own.
	serializable bool
}

// trafficConfig shapes the load.
type trafficConfig struct {
	keys       int           // number of distinct keys
	opInterval time.Duration // mean pause between one client's requests
	opTimeout  time.Duration // per-request deadline
}

func keyName(i int) string { return fmt.Sprintf("%s%d", keyPrefix, i) }

// trafficClient issues random requests and records them.
type trafficClient struct {
	id   int
	cli  *clientv3.Client
	rng  *rand.Rand
	cfg  trafficConfig
	now  func() int64
	seq  int
	recs []record
	// seen is the last value this client observed per key, for
	// compare-and-swap.
	seen map[string]kv
	// lease cycle: grant, put a key with the lease, revoke.
	lease         int64
	leaseAttached bool
	// anomalies are responses that are wrong on their own.
	anomalies []string
}

func (tc *trafficClient) value() string {
	tc.seq++
	return fmt.Sprintf("c%d-%d", tc.id, tc.seq)
}

// run issues requests until ctx is done.
func (tc *trafficClient) run(ctx context.Context) {
	for ctx.Err() == nil {
		pause := time.Duration(tc.rng.Int64N(int64(2*tc.cfg.opInterval) + 1))
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		tc.one(ctx)
	}
}

// one issues one random request. The request's own deadline is not tied
// to ctx, so that stopping the traffic does not turn in-flight requests
// into failures.
func (tc *trafficClient) one(stop context.Context) {
	key := keyName(tc.rng.IntN(tc.cfg.keys))
	ctx, cancel := context.WithTimeout(context.Background(), tc.cfg.opTimeout)
	defer cancel()
	switch n := tc.rng.IntN(100); {
	case n < 25:
		tc.get(ctx, key, false, false)
	case n < 30:
		tc.get(ctx, keyPrefix, true, false)
	case n < 40:
		tc.get(ctx, key, false, true)
	case n < 62:
		tc.put(ctx, key, 0)
	case n < 70:
		tc.del(ctx, key)
	case n < 88:
		tc.txn(ctx, key)
	default:
		tc.leaseStep(ctx, key)
	}
}

func toKVs(in []*mvccpb.KeyValue) []kv {
	var out []kv
	for _, k := range in {
		out = append(out, kv{key: string(k.Key), value: string(k.Value), createRev: k.CreateRevision, mod: k.ModRevision, version: k.Version, lease: k.Lease})
	}
	return out
}

func (tc *trafficClient) add(in *input, out *output, call int64, serializable bool) {
	tc.recs = append(tc.recs, record{client: tc.id, in: in, out: out, call: call, ret: tc.now(), serializable: serializable})
}

// failed records a write that returned err: its outcome is unknown.
func (tc *trafficClient) failed(in *input, call int64, err error) {
	tc.add(in, &output{unknown: true, err: shortErr(err)}, call, false)
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}

func (tc *trafficClient) get(ctx context.Context, key string, prefix, serializable bool) {
	in := &input{kind: opGet, key: key, pfx: prefix}
	var opts []clientv3.OpOption
	if prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	if serializable {
		opts = append(opts, clientv3.WithSerializable())
	}
	call := tc.now()
	resp, err := tc.cli.Get(ctx, key, opts...)
	if err != nil {
		return // a failed read has no effect
	}
	out := &output{rev: resp.Header.Revision, kvs: toKVs(resp.Kvs)}
	tc.add(in, out, call, serializable)
	if !prefix && !serializable {
		tc.observe(key, out.kvs)
	}
}

func (tc *trafficClient) observe(key string, kvs []kv) {
	if len(kvs) == 1 {
		tc.seen[key] = kvs[0]
	} else {
		delete(tc.seen, key)
	}
}

func (tc *trafficClient) put(ctx context.Context, key string, lease int64) bool {
	in := &input{kind: opPut, key: key, value: tc.value(), lease: lease}
	var opts []clientv3.OpOption
	if lease != 0 {
		opts = append(opts, clientv3.WithLease(clientv3.LeaseID(lease)))
	}
	call := tc.now()
	resp, err := tc.cli.Put(ctx, key, in.value, opts...)
	if err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			tc.anomalies = append(tc.anomalies, fmt.Sprintf("client %d: put %q with lease %x, granted and never revoked: %v", tc.id, key, lease, err))
		}
		tc.failed(in, call, err)
		return false
	}
	tc.add(in, &output{rev: resp.Header.Revision}, call, false)
	return true
}

func (tc *trafficClient) del(ctx context.Context, key string) {
	in := &input{kind: opDelete, key: key}
	call := tc.now()
	resp, err := tc.cli.Delete(ctx, key)
	if err != nil {
		tc.failed(in, call, err)
		return
	}
	tc.add(in, &output{rev: resp.Header.Revision, deleted: resp.Deleted}, call, false)
}

// txn is a compare-and-swap on the value this client last saw: by mod
// revision or by value (a key it has not seen is compared with mod
// revision 0, i.e. "does not exist").
func (tc *trafficClient) txn(ctx context.Context, key string) {
	in := &input{kind: opTxn, key: key, value: tc.value(), cmpByRev: true}
	seen, ok := tc.seen[key]
	if ok {
		in.cmpRev = seen.mod
		if tc.rng.IntN(2) == 0 {
			in.cmpByRev, in.cmpValue = false, seen.value
		}
	}
	cmp := clientv3.Compare(clientv3.ModRevision(key), "=", in.cmpRev)
	if !in.cmpByRev {
		cmp = clientv3.Compare(clientv3.Value(key), "=", in.cmpValue)
	}
	call := tc.now()
	resp, err := tc.cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, in.value)).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		tc.failed(in, call, err)
		return
	}
	out := &output{rev: resp.Header.Revision, succeeded: resp.Succeeded}
	if !resp.Succeeded {
		if len(resp.Responses) != 1 || resp.Responses[0].GetResponseRange() == nil {
			tc.anomalies = append(tc.anomalies, fmt.Sprintf("client %d: txn on %q failed without the else branch's range response: %v", tc.id, key, resp.Responses))
			return
		}
		out.kvs = toKVs(resp.Responses[0].GetResponseRange().Kvs)
	}
	tc.add(in, out, call, false)
	if resp.Succeeded {
		tc.seen[key] = kv{key: key, value: in.value, mod: out.rev}
	} else {
		tc.observe(key, out.kvs)
	}
}

// leaseStep advances the client's lease cycle by one request.
func (tc *trafficClient) leaseStep(ctx context.Context, key string) {
	switch {
	case tc.lease == 0:
		in := &input{kind: opLeaseGrant}
		call := tc.now()
		resp, err := tc.cli.Grant(ctx, leaseTTL)
		if err != nil {
			return // a lease nobody uses has no effect on the keys
		}
		tc.add(in, &output{rev: resp.Revision}, call, false)
		tc.lease = int64(resp.ID)
	case !tc.leaseAttached:
		if tc.put(ctx, key, tc.lease) {
			tc.leaseAttached = true
		} else {
			tc.lease = 0 // the put may have attached it: never revoke blindly
		}
	default:
		in := &input{kind: opLeaseRevoke, lease: tc.lease}
		tc.lease, tc.leaseAttached = 0, false
		call := tc.now()
		resp, err := tc.cli.Revoke(ctx, clientv3.LeaseID(in.lease))
		if err != nil {
			tc.failed(in, call, err)
			return
		}
		tc.add(in, &output{rev: resp.Header.Revision}, call, false)
	}
}
