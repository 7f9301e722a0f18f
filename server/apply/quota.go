package apply

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// DefaultQuotaBytes is the backend quota when none is configured (etcd's
// default, 2 GiB).
const DefaultQuotaBytes int64 = 2 * 1024 * 1024 * 1024

// Estimated storage costs of etcd's quota: what a key's metadata and a
// lease take in the backend beyond their own bytes.
const (
	kvOverhead    = 256
	leaseOverhead = 64
)

// backendQuota judges whether a write fits in the backend: its size now
// plus the request's estimated cost must stay below the quota.
type backendQuota struct {
	be    backend.Backend
	bytes int64 // the quota in force; < 0: no quota
}

func newBackendQuota(be backend.Backend, configured int64) backendQuota {
	if configured == 0 {
		configured = DefaultQuotaBytes
	}
	return backendQuota{be: be, bytes: configured}
}

func (q backendQuota) available(r proto.Message) bool {
	if q.bytes < 0 {
		return true
	}
	cost := requestCost(r)
	if cost == 0 {
		return true
	}
	return q.be.Size()+cost < q.bytes
}

// QuotaAvailable reports whether r fits in the backend quota, as etcd's
// backend quota judges it: requests that write nothing always fit.
func (a *Applier) QuotaAvailable(r proto.Message) bool {
	return a.quota.available(r)
}

// QuotaBytes is the backend quota in force: the configured value, 2 GiB
// when none was configured; a negative value means no quota.
func (a *Applier) QuotaBytes() int64 {
	return a.quota.bytes
}

// requestCost is etcd's estimate of how many bytes r adds to the backend:
// a Put costs its key and value plus kvOverhead, a Txn the costlier of its
// two branches (nested Txns included), a LeaseGrant leaseOverhead. Other
// requests cost nothing.
func requestCost(r proto.Message) int64 {
	switch req := r.(type) {
	case *pb.PutRequest:
		return putCost(req)
	case *pb.TxnRequest:
		return txnCost(req)
	case *pb.LeaseGrantRequest:
		return leaseOverhead
	default:
		return 0
	}
}

func putCost(p *pb.PutRequest) int64 {
	return kvOverhead + int64(len(p.GetKey())+len(p.GetValue()))
}

func txnCost(rt *pb.TxnRequest) int64 {
	return max(opsCost(rt.GetSuccess()), opsCost(rt.GetFailure()))
}

func opsCost(ops []*pb.RequestOp) int64 {
	var sum int64
	for _, op := range ops {
		if p := op.GetRequestPut(); p != nil {
			sum += putCost(p)
		} else if t := op.GetRequestTxn(); t != nil {
			sum += txnCost(t)
		}
	}
	return sum
}
