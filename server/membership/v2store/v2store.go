// Package v2store owns the "v2 store" payload: the JSON document etcd v3.7
// puts in the Data of every raft snapshot, both the member/snap/*.snap files
// and the snapshots a leader sends to followers.
//
// etcd v3.7 no longer keeps a live v2 store. Whenever it takes a snapshot it
// builds a brand-new one holding the directories "/0" and "/1", writes the
// cluster membership into it and serialises it. The payload is therefore a
// pure function of the membership at that moment, and this package computes
// it the same way, byte for byte:
//
//  1. a lookup of /0/members that fails (the emptiness check), so every
//     payload carries "getsFail":1;
//  2. for each member: create /0/members/<id>/raftAttributes, then, if the
//     member has client URLs (it has published), set .../attributes;
//  3. for each removed member: create /0/removed_members/<id> (empty value);
//  4. if the cluster version is known: set /0/version.
//
// Every write takes the next index (starting at 1), creates any missing
// parent directory at that same index, bumps the create or set counter and
// appends an event to a 1000-slot ring buffer. Nothing depends on a clock:
// every node is permanent, so its ExpireTime is the zero time.
//
// etcd walks its members and removed members in Go map order, so with more
// than one of either, etcd itself writes any of several equally valid
// payloads. Store instead uses a fixed order: the order entries were added,
// or, after Load, the order of their indexes in the loaded payload, so that
// Load followed by Save reproduces a payload written by etcd v3.7.
//
// A Store is not safe for concurrent use.
package v2store

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Member is one cluster member as the v2 store records it.
type Member struct {
	ID        uint64
	PeerURLs  []string
	IsLearner bool
	// Name and ClientURLs are the attributes a member publishes once it has
	// started. They are written only when ClientURLs is non-nil, as etcd
	// does; an unstarted member (nil ClientURLs) has no attributes node.
	Name       string
	ClientURLs []string
}

// Store is the cluster membership that a v2 store payload describes.
type Store struct {
	members []*Member
	removed []uint64
	version string
}

// New returns a store with no members, no removed members and no cluster
// version.
func New() *Store { return &Store{} }

// AddMember adds member id with its raft attributes, as bootstrapping or
// MemberAdd does. If id is already a member its raft attributes are replaced.
func (s *Store) AddMember(id uint64, peerURLs []string, isLearner bool) {
	if m := s.find(id); m != nil {
		m.PeerURLs, m.IsLearner = cloneStrings(peerURLs), isLearner
		return
	}
	s.members = append(s.members, &Member{ID: id, PeerURLs: cloneStrings(peerURLs), IsLearner: isLearner})
}

// SetMemberAttributes records the attributes member id published. A nil
// clientURLs means "not published": no attributes node is written. Unknown
// members are ignored.
func (s *Store) SetMemberAttributes(id uint64, name string, clientURLs []string) {
	if m := s.find(id); m != nil {
		m.Name, m.ClientURLs = name, cloneStrings(clientURLs)
	}
}

// UpdateRaftAttributes replaces the raft attributes of member id, as
// MemberUpdate and MemberPromote do. Unknown members are ignored.
func (s *Store) UpdateRaftAttributes(id uint64, peerURLs []string, isLearner bool) {
	if m := s.find(id); m != nil {
		m.PeerURLs, m.IsLearner = cloneStrings(peerURLs), isLearner
	}
}

// RemoveMember removes member id and records it as removed.
func (s *Store) RemoveMember(id uint64) {
	for i, m := range s.members {
		if m.ID == id {
			s.members = append(s.members[:i], s.members[i+1:]...)
			break
		}
	}
	for _, r := range s.removed {
		if r == id {
			return
		}
	}
	s.removed = append(s.removed, id)
}

// SetClusterVersion sets the cluster version as etcd writes it, e.g.
// "3.7.0" (major.minor.0). An empty v means the version is not decided yet:
// no /0/version node is written.
func (s *Store) SetClusterVersion(v string) { s.version = v }

// Members returns a copy of the members, in the order Save writes them.
func (s *Store) Members() []Member {
	out := make([]Member, len(s.members))
	for i, m := range s.members {
		out[i] = *m
		out[i].PeerURLs = cloneStrings(m.PeerURLs)
		out[i].ClientURLs = cloneStrings(m.ClientURLs)
	}
	return out
}

// Removed returns the IDs of the removed members, in the order Save writes
// them.
func (s *Store) Removed() []uint64 { return append([]uint64(nil), s.removed...) }

// ClusterVersion returns the cluster version, or "" if it is not set.
func (s *Store) ClusterVersion() string { return s.version }

func (s *Store) find(id uint64) *Member {
	for _, m := range s.members {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// cloneStrings copies ss, keeping the difference between nil and empty,
// which shows in the JSON (null vs [], attributes written or not).
func cloneStrings(ss []string) []string {
	if ss == nil {
		return nil
	}
	return append([]string{}, ss...)
}

// Paths of the membership data inside the v2 store.
const (
	clusterDir  = "/0"
	keysDir     = "/1"
	membersDir  = "/0/members"
	removedDir  = "/0/removed_members"
	versionPath = "/0/version"

	raftAttributesName = "raftAttributes"
	attributesName     = "attributes"

	// storeVersion is the store format version etcd writes as CurrentVersion.
	storeVersion = 2
	// historySize is the capacity of the event history ring buffer.
	historySize = 1000
)

// The JSON forms of a member's two values.
type raftAttributes struct {
	PeerURLs  []string `json:"peerURLs"`
	IsLearner bool     `json:"isLearner,omitempty"`
}

type attributes struct {
	Name       string   `json:"name,omitempty"`
	ClientURLs []string `json:"clientURLs,omitempty"`
}

// The JSON layout of the payload. Field order and names are the format.
type document struct {
	Root           *node
	WatcherHub     watcherHub
	CurrentIndex   uint64
	Stats          stats
	CurrentVersion int
}

// node is a directory (Children non-nil, possibly empty) or a value
// (Children nil, encoded as null).
type node struct {
	Path          string
	CreatedIndex  uint64
	ModifiedIndex uint64
	ExpireTime    time.Time
	Value         string
	Children      map[string]*node
}

type watcherHub struct {
	EventHistory eventHistory
}

type eventHistory struct {
	Queue      eventQueue
	StartIndex uint64
	LastIndex  uint64
}

// eventQueue is a ring buffer: Events always has Capacity slots, the oldest
// event is at Front and the next one goes to Back.
type eventQueue struct {
	Events   []*event
	Size     int
	Front    int
	Back     int
	Capacity int
}

type event struct {
	Action string     `json:"action"`
	Node   *eventNode `json:"node,omitempty"`
}

type eventNode struct {
	Key           string  `json:"key,omitempty"`
	Value         *string `json:"value,omitempty"`
	ModifiedIndex uint64  `json:"modifiedIndex,omitempty"`
	CreatedIndex  uint64  `json:"createdIndex,omitempty"`
}

type stats struct {
	GetsSuccess             uint64 `json:"getsSuccess"`
	GetsFail                uint64 `json:"getsFail"`
	SetsSuccess             uint64 `json:"setsSuccess"`
	SetsFail                uint64 `json:"setsFail"`
	DeleteSuccess           uint64 `json:"deleteSuccess"`
	DeleteFail              uint64 `json:"deleteFail"`
	UpdateSuccess           uint64 `json:"updateSuccess"`
	UpdateFail              uint64 `json:"updateFail"`
	CreateSuccess           uint64 `json:"createSuccess"`
	CreateFail              uint64 `json:"createFail"`
	CompareAndSwapSuccess   uint64 `json:"compareAndSwapSuccess"`
	CompareAndSwapFail      uint64 `json:"compareAndSwapFail"`
	CompareAndDeleteSuccess uint64 `json:"compareAndDeleteSuccess"`
	CompareAndDeleteFail    uint64 `json:"compareAndDeleteFail"`
	ExpireCount             uint64 `json:"expireCount"`
	Watchers                uint64 `json:"watchers"`
}

func newDir(p string, index uint64) *node {
	return &node{Path: p, CreatedIndex: index, ModifiedIndex: index, Children: map[string]*node{}}
}

// Save returns the payload etcd v3.7 would put in a snapshot for this
// membership.
func (s *Store) Save() ([]byte, error) {
	d := &document{
		Root: newDir("/", 0),
		WatcherHub: watcherHub{EventHistory: eventHistory{Queue: eventQueue{
			Events:   make([]*event, historySize),
			Capacity: historySize,
		}}},
		CurrentVersion: storeVersion,
	}
	d.Root.Children["0"] = newDir(clusterDir, 0)
	d.Root.Children["1"] = newDir(keysDir, 0)

	// The check that the fresh store holds no members: /0/members is missing.
	d.Stats.GetsFail++

	for _, m := range s.members {
		key := memberDir(m.ID)
		ra, err := json.Marshal(raftAttributes{PeerURLs: m.PeerURLs, IsLearner: m.IsLearner})
		if err != nil {
			return nil, fmt.Errorf("v2store: encode raft attributes of %x: %w", m.ID, err)
		}
		d.write("create", path.Join(key, raftAttributesName), string(ra))
		if m.ClientURLs != nil {
			a, err := json.Marshal(attributes{Name: m.Name, ClientURLs: m.ClientURLs})
			if err != nil {
				return nil, fmt.Errorf("v2store: encode attributes of %x: %w", m.ID, err)
			}
			d.write("set", path.Join(key, attributesName), string(a))
		}
	}
	for _, id := range s.removed {
		d.write("create", path.Join(removedDir, formatID(id)), "")
	}
	if s.version != "" {
		d.write("set", versionPath, s.version)
	}
	return json.Marshal(d)
}

// write stores value at p (which does not exist yet) as the next index,
// creating missing parent directories, and records the event and counters
// of action ("create" or "set").
func (d *document) write(action, p, value string) {
	d.CurrentIndex++
	idx := d.CurrentIndex

	dir := d.Root
	parent, name := path.Split(p)
	walked := ""
	for _, c := range splitPath(parent) {
		walked += "/" + c
		child, ok := dir.Children[c]
		if !ok {
			child = newDir(walked, idx)
			dir.Children[c] = child
		}
		dir = child
	}
	dir.Children[name] = &node{Path: p, CreatedIndex: idx, ModifiedIndex: idx, Value: value}

	switch action {
	case "create":
		d.Stats.CreateSuccess++
	case "set":
		d.Stats.SetsSuccess++
	}

	v := value
	h := &d.WatcherHub.EventHistory
	q := &h.Queue
	q.Events[q.Back] = &event{Action: action, Node: &eventNode{Key: p, Value: &v, ModifiedIndex: idx, CreatedIndex: idx}}
	q.Back = (q.Back + 1) % q.Capacity
	if q.Size == q.Capacity {
		q.Front = (q.Front + 1) % q.Capacity
	} else {
		q.Size++
	}
	h.LastIndex = idx
	h.StartIndex = q.Events[q.Front].Node.ModifiedIndex
}

// splitPath returns the non-empty components of p.
func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
}

func formatID(id uint64) string { return strconv.FormatUint(id, 16) }

func memberDir(id uint64) string { return path.Join(membersDir, formatID(id)) }

// Load reads the membership out of a snapshot payload written by etcd (any
// v3 release) or by Save. Empty data gives New(). Only the membership is
// kept: user keys under /1, v2 auth data, counters and events are dropped,
// exactly as etcd v3.7 drops them at its next snapshot. Members and removed
// members keep the order of their indexes in data.
func Load(data []byte) (*Store, error) {
	if len(data) == 0 {
		return New(), nil
	}
	var d struct{ Root *node }
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("v2store: decode payload: %w", err)
	}
	if d.Root == nil {
		return nil, errors.New("v2store: payload has no Root")
	}
	s := New()
	cluster := d.Root.Children["0"]
	if cluster == nil {
		return s, nil
	}

	type ordered struct {
		index uint64
		id    uint64
	}
	byIndex := func(o []ordered) {
		sort.Slice(o, func(i, j int) bool {
			if o[i].index != o[j].index {
				return o[i].index < o[j].index
			}
			return o[i].id < o[j].id
		})
	}

	if dir := cluster.Children["members"]; dir != nil {
		var order []ordered
		found := map[uint64]*Member{}
		for key, n := range dir.Children {
			id, err := strconv.ParseUint(key, 16, 64)
			if err != nil {
				return nil, fmt.Errorf("v2store: bad member key %q", key)
			}
			m, index, err := decodeMember(id, n)
			if err != nil {
				return nil, err
			}
			found[id] = m
			order = append(order, ordered{index, id})
		}
		byIndex(order)
		for _, o := range order {
			s.members = append(s.members, found[o.id])
		}
	}

	if dir := cluster.Children["removed_members"]; dir != nil {
		var order []ordered
		for key, n := range dir.Children {
			id, err := strconv.ParseUint(key, 16, 64)
			if err != nil {
				return nil, fmt.Errorf("v2store: bad removed member key %q", key)
			}
			order = append(order, ordered{n.CreatedIndex, id})
		}
		byIndex(order)
		for _, o := range order {
			s.removed = append(s.removed, o.id)
		}
	}

	if v := cluster.Children["version"]; v != nil {
		s.version = v.Value
	}
	return s, nil
}

// decodeMember reads one /0/members/<id> directory and returns the member
// and the index of its raftAttributes, which gives its place in the order.
func decodeMember(id uint64, dir *node) (*Member, uint64, error) {
	m := &Member{ID: id}
	ra := dir.Children[raftAttributesName]
	if ra == nil {
		return nil, 0, fmt.Errorf("v2store: member %x has no raftAttributes", id)
	}
	for name := range dir.Children {
		if name != raftAttributesName && name != attributesName {
			return nil, 0, fmt.Errorf("v2store: member %x has unknown key %q", id, name)
		}
	}
	var r raftAttributes
	if err := json.Unmarshal([]byte(ra.Value), &r); err != nil {
		return nil, 0, fmt.Errorf("v2store: member %x raftAttributes: %w", id, err)
	}
	m.PeerURLs, m.IsLearner = r.PeerURLs, r.IsLearner
	if an := dir.Children[attributesName]; an != nil {
		var a attributes
		if err := json.Unmarshal([]byte(an.Value), &a); err != nil {
			return nil, 0, fmt.Errorf("v2store: member %x attributes: %w", id, err)
		}
		m.Name, m.ClientURLs = a.Name, a.ClientURLs
		if m.ClientURLs == nil {
			// The node exists, so etcd had non-nil (empty) client URLs.
			m.ClientURLs = []string{}
		}
	}
	return m, ra.CreatedIndex, nil
}
