package etcdserver

import (
	"context"
	"errors"
	"slices"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/auth"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// Once Stop has closed the stores, every read answers "stopped" without
// touching a handle (they are nil here: touching one would panic).
func TestStoresClosedAnswerStopped(t *testing.T) {
	st := &stores{closed: true, lg: zap.NewNop()}
	ctx := context.Background()
	if _, ok := st.backend(); ok {
		t.Error("backend: ok")
	}
	if _, ok := st.storeStatus(); ok {
		t.Error("storeStatus: ok")
	}
	if st.withStores(func(backend.Backend) {}) {
		t.Error("withStores ran")
	}
	if st.currentRev() != 0 || st.alarms() != nil || st.quotaBytes() != 0 || st.members() != nil || st.hashes() != nil {
		t.Error("a closed store reported figures")
	}
	if _, ok := st.quotaAvailable(&pb.PutRequest{}); ok {
		t.Error("quotaAvailable: ok")
	}
	if st.IsIDRemoved(1) {
		t.Error("IsIDRemoved: true")
	}
	stopped := map[string]error{}
	_, _, stopped["hashByRev"] = st.hashByRev(0)
	_, stopped["checkPassword"] = st.checkPassword("u", "p")
	_, stopped["rangeLocal"] = st.rangeLocal(ctx, &pb.RangeRequest{})
	_, stopped["txnLocal"] = st.txnLocal(ctx, auth.AuthInfo{}, &pb.TxnRequest{})
	_, stopped["newWatchStream"] = st.newWatchStream()
	_, stopped["keyAt"] = st.keyAt(ctx, []byte("k"), 1)
	for name, err := range stopped {
		if !errors.Is(err, errs.ErrStopped) {
			t.Errorf("%s: %v, want ErrStopped", name, err)
		}
	}
}

// The members and the removed list come from the backend's members
// buckets.
func TestStoresMembers(t *testing.T) {
	st := &stores{be: testBackend(t), lg: zap.NewNop()}
	tx := st.be.BatchTx()
	tx.Lock()
	for _, m := range []*membership.Member{{ID: 1, PeerURLs: []string{"http://a:1"}}, {ID: 2, PeerURLs: []string{"http://b:1"}}} {
		if err := membership.Save(tx, m); err != nil {
			t.Fatal(err)
		}
	}
	membership.Remove(tx, 2)
	tx.Unlock()
	var ids []uint64
	for _, m := range st.members() {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []uint64{1}) {
		t.Errorf("members %v, want [1]", ids)
	}
	if !st.IsIDRemoved(2) || st.IsIDRemoved(1) {
		t.Error("IsIDRemoved: want 2 removed, 1 not")
	}
	if urls := st.memberPeerURLs(1); !slices.Equal(urls, []string{"http://a:1"}) {
		t.Errorf("peer URLs of 1: %v", urls)
	}
}
