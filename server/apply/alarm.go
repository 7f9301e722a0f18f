package apply

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// alarmSet holds the active alarms, one per (member, type), kept sorted by
// type then member so every listing is the same on every member. Each
// alarm is also a key in the backend's alarm bucket: the marshaled
// AlarmMember with an empty value, etcd's layout.
type alarmSet struct {
	mu      sync.Mutex
	be      backend.Backend
	members []*pb.AlarmMember
}

func loadAlarms(be backend.Backend) (*alarmSet, error) {
	s := &alarmSet{be: be}
	tx := be.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	err := tx.UnsafeForEach(backend.BucketAlarm, func(k, _ []byte) error {
		m := &pb.AlarmMember{}
		if err := proto.Unmarshal(k, m); err != nil {
			return fmt.Errorf("alarm key %x: %w", k, err)
		}
		s.insert(m)
		return nil
	})
	return s, err
}

func compareAlarms(x, y *pb.AlarmMember) int {
	if c := cmp.Compare(x.Alarm, y.Alarm); c != 0 {
		return c
	}
	return cmp.Compare(x.MemberID, y.MemberID)
}

// find returns where (memberID, t) is or would be, and whether it is there.
func (s *alarmSet) find(memberID uint64, t pb.AlarmType) (int, bool) {
	return slices.BinarySearchFunc(s.members, &pb.AlarmMember{MemberID: memberID, Alarm: t}, compareAlarms)
}

func (s *alarmSet) insert(m *pb.AlarmMember) {
	if i, found := s.find(m.MemberID, m.Alarm); !found {
		s.members = slices.Insert(s.members, i, m)
	}
}

// activate raises alarm t for memberID and returns the active alarm (the
// existing one if it was already raised).
func (s *alarmSet) activate(memberID uint64, t pb.AlarmType) *pb.AlarmMember {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, found := s.find(memberID, t)
	if found {
		return proto.Clone(s.members[i]).(*pb.AlarmMember)
	}
	m := &pb.AlarmMember{MemberID: memberID, Alarm: t}
	s.members = slices.Insert(s.members, i, m)
	s.persist(m, true)
	return proto.Clone(m).(*pb.AlarmMember)
}

// deactivate clears alarm t of memberID and returns it, or nil if it was
// not active.
func (s *alarmSet) deactivate(memberID uint64, t pb.AlarmType) *pb.AlarmMember {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, found := s.find(memberID, t)
	if !found {
		return nil
	}
	m := s.members[i]
	s.members = slices.Delete(s.members, i, i+1)
	s.persist(m, false)
	return m
}

// persist writes or removes m's key in the alarm bucket, in the batch the
// member commits with this entry's consistent index.
func (s *alarmSet) persist(m *pb.AlarmMember, present bool) {
	key, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		// An AlarmMember is two scalars; marshaling it cannot fail.
		panic(fmt.Sprintf("apply: marshal alarm member: %v", err))
	}
	tx := s.be.BatchTx()
	tx.Lock()
	defer tx.Unlock()
	if present {
		tx.UnsafePut(backend.BucketAlarm, key, []byte{})
	} else {
		tx.UnsafeDelete(backend.BucketAlarm, key)
	}
}

// get returns copies of the active alarms of type t, or of every type for
// AlarmType_NONE, sorted by type then member.
func (s *alarmSet) get(t pb.AlarmType) []*pb.AlarmMember {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*pb.AlarmMember
	for _, m := range s.members {
		if t == pb.AlarmType_NONE || m.Alarm == t {
			out = append(out, proto.Clone(m).(*pb.AlarmMember))
		}
	}
	return out
}

func (s *alarmSet) active(t pb.AlarmType) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.members {
		if m.Alarm == t {
			return true
		}
	}
	return false
}

// Alarms returns every active alarm, sorted by type then member id.
func (a *Applier) Alarms() []*pb.AlarmMember {
	return a.alarms.get(pb.AlarmType_NONE)
}

// applyAlarm answers an AlarmRequest as etcd does: GET lists the alarms of
// the given type (all for NONE); ACTIVATE raises one (NONE is ignored) and
// returns it; DEACTIVATE clears one and returns it, or nothing if it was
// not active. Alarm requests pass even under a CORRUPT alarm.
func (a *Applier) applyAlarm(r *pb.AlarmRequest) *Result {
	resp := &pb.AlarmResponse{Header: &pb.ResponseHeader{Revision: a.kv.Rev()}}
	switch r.Action {
	case pb.AlarmRequest_GET:
		resp.Alarms = a.alarms.get(r.Alarm)
	case pb.AlarmRequest_ACTIVATE:
		if r.Alarm != pb.AlarmType_NONE {
			resp.Alarms = append(resp.Alarms, a.alarms.activate(r.MemberID, r.Alarm))
		}
	case pb.AlarmRequest_DEACTIVATE:
		if m := a.alarms.deactivate(r.MemberID, r.Alarm); m != nil {
			resp.Alarms = append(resp.Alarms, m)
		}
	}
	return &Result{Resp: resp}
}
