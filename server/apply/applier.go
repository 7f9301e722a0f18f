package apply

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cairnkv/cairn/server/auth"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/lease"
	"github.com/cairnkv/cairn/server/metrics"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// ErrUnsupportedRequest is returned by Apply for a raft request this applier
// does not handle (for example lease or auth requests, which other appliers own).
var ErrUnsupportedRequest = errors.New("apply: unsupported request")

// LeaseLookup tells whether a lease exists. A nil LeaseLookup means no lease
// exists, so every request naming a lease fails with errs.ErrLeaseNotFound.
type LeaseLookup interface {
	Exists(id int64) bool
}

// Config wires an Applier to the stores it changes.
type Config struct {
	KV      mvcc.KV
	Backend backend.Backend
	// QuotaBackendBytes is the backend size quota: 0 means etcd's default
	// (2 GiB), a negative value disables the quota.
	QuotaBackendBytes int64
	Leases            LeaseLookup
	// Lessor, when set, applies lease requests and is told which keys each
	// write attached to or detached from a lease; it also serves as Leases.
	Lessor *lease.Lessor
	// Auth, when set, applies auth requests and checks every request's
	// permissions against the sender its header names.
	Auth   *auth.Store
	Logger *zap.Logger
}

// Result is the outcome of one applied request.
type Result struct {
	// Resp is the response; it may be set together with Err (a Put or Txn
	// over quota is applied and still answers errs.ErrNoSpace).
	Resp proto.Message
	Err  error
	// Physc is closed when a Compaction's physical removal is done.
	Physc <-chan struct{}
}

// Applier applies committed requests to the mvcc store and the alarm set.
// Apply must be called from one goroutine; Range, Alarms, QuotaAvailable and
// QuotaBytes may be called concurrently with it.
type Applier struct {
	lg     *zap.Logger
	kv     mvcc.KV
	be     backend.Backend
	leases LeaseLookup
	lessor *lease.Lessor
	auth   *auth.Store
	quota  backendQuota
	alarms *alarmSet
}

// New returns an Applier and loads the active alarms from the backend's
// alarm bucket, so alarms raised before a restart still apply.
func New(cfg Config) (*Applier, error) {
	if cfg.KV == nil || cfg.Backend == nil {
		return nil, errors.New("apply: Config.KV and Config.Backend are required")
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	alarms, err := loadAlarms(cfg.Backend)
	if err != nil {
		return nil, fmt.Errorf("apply: loading alarms: %w", err)
	}
	leases := cfg.Leases
	if cfg.Lessor != nil {
		leases = cfg.Lessor
	}
	return &Applier{
		lg:     lg,
		kv:     cfg.KV,
		be:     cfg.Backend,
		leases: leases,
		lessor: cfg.Lessor,
		auth:   cfg.Auth,
		quota:  newBackendQuota(cfg.Backend, cfg.QuotaBackendBytes),
		alarms: alarms,
	}, nil
}

// Apply applies one committed request. It dispatches on the request field
// that is set; a request it does not handle gets ErrUnsupportedRequest.
// ctx's values are passed on but its cancellation is ignored: a request
// applied on one member must be applied alike on all, whoever stopped
// waiting for it.
func (a *Applier) Apply(ctx context.Context, r *pb.InternalRaftRequest) *Result {
	if ctx.Done() != nil { // a context that cannot be cancelled needs no wrapper
		ctx = context.WithoutCancel(ctx)
	}
	if res, ok := a.applyAuthRequest(ctx, r); ok {
		return res
	}
	if err := a.checkPermission(r); err != nil {
		return &Result{Err: err}
	}
	switch {
	case r.Range != nil:
		return a.applyRange(ctx, r.Range)
	case r.Put != nil:
		metrics.MVCCPut.Inc()
		return a.applyPut(ctx, r.Put)
	case r.DeleteRange != nil:
		metrics.MVCCDelete.Inc()
		return a.applyDeleteRange(ctx, r.DeleteRange)
	case r.Txn != nil:
		metrics.MVCCTxn.Inc()
		return a.applyTxn(ctx, r.Txn)
	case r.Compaction != nil:
		return a.applyCompaction(r.Compaction)
	case r.Alarm != nil:
		return a.applyAlarm(r.Alarm)
	case r.LeaseGrant != nil:
		return a.applyLeaseGrant(r.LeaseGrant)
	case r.LeaseRevoke != nil:
		return a.applyLeaseRevoke(r.LeaseRevoke)
	case r.LeaseCheckpoint != nil:
		return a.applyLeaseCheckpoint(r.LeaseCheckpoint)
	default:
		return &Result{Err: fmt.Errorf("%w: %s", ErrUnsupportedRequest, requestFields(r))}
	}
}

func (a *Applier) applyRange(ctx context.Context, r *pb.RangeRequest) *Result {
	if err := a.corruptErr(); err != nil {
		return &Result{Err: err}
	}
	resp, err := a.Range(ctx, r)
	return result(resp, err)
}

func (a *Applier) applyPut(ctx context.Context, p *pb.PutRequest) *Result {
	if err := a.corruptErr(); err != nil {
		return &Result{Err: err}
	}
	if a.alarms.active(pb.AlarmType_NOSPACE) {
		return &Result{Err: errs.ErrNoSpace}
	}
	// Measured before the write, as etcd does: the request is judged by the
	// size the backend had when it arrived.
	fits := a.QuotaAvailable(p)
	resp, err := a.put(ctx, p)
	return overQuota(result(resp, err), fits)
}

func (a *Applier) applyDeleteRange(ctx context.Context, dr *pb.DeleteRangeRequest) *Result {
	if err := a.corruptErr(); err != nil {
		return &Result{Err: err}
	}
	resp, err := a.deleteRange(ctx, dr)
	return result(resp, err)
}

func (a *Applier) applyTxn(ctx context.Context, rt *pb.TxnRequest) *Result {
	if err := a.corruptErr(); err != nil {
		return &Result{Err: err}
	}
	if a.alarms.active(pb.AlarmType_NOSPACE) && txnCost(rt) > 0 {
		return &Result{Err: errs.ErrNoSpace}
	}
	fits := a.QuotaAvailable(rt)
	resp, err := a.txn(ctx, rt)
	return overQuota(result(resp, err), fits)
}

func (a *Applier) applyCompaction(r *pb.CompactionRequest) *Result {
	if err := a.corruptErr(); err != nil {
		return &Result{Err: err}
	}
	physc, err := a.kv.Compact(r.Revision)
	if err != nil {
		return &Result{Err: err, Physc: physc}
	}
	resp := &pb.CompactionResponse{Header: &pb.ResponseHeader{Revision: a.kv.Rev()}}
	return &Result{Resp: resp, Physc: physc}
}

// corruptErr is the error every KV request gets while a CORRUPT alarm is
// active: a member whose data may diverge must not serve or change it.
func (a *Applier) corruptErr() error {
	if a.alarms.active(pb.AlarmType_CORRUPT) {
		return errs.ErrCorrupt
	}
	return nil
}

// overQuota turns a successful result into errs.ErrNoSpace when the request
// did not fit the quota; the response stays, the write has happened.
func overQuota(res *Result, fits bool) *Result {
	if res.Err == nil && !fits {
		res.Err = errs.ErrNoSpace
	}
	return res
}

// result builds a Result from a typed response, keeping Resp a nil interface
// when the response pointer is nil.
func result[T proto.Message](resp T, err error) *Result {
	res := &Result{Err: err}
	if resp.ProtoReflect().IsValid() {
		res.Resp = resp
	}
	return res
}

// requestFields names the populated fields of an unsupported request, sorted
// so the error text is the same on every member.
func requestFields(r *pb.InternalRaftRequest) string {
	var names []string
	r.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if name := string(fd.Name()); name != "header" && name != "ID" {
			names = append(names, name)
		}
		return true
	})
	if len(names) == 0 {
		return "empty request"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
