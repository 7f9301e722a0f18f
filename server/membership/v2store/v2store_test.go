package v2store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	defaultID = 0x8e9e05c52164694d
	learnerID = 0x1367190204026f07
)

// defaultMember is what a fresh `etcd --name default` publishes.
func defaultMember(s *Store) {
	s.AddMember(defaultID, []string{"http://localhost:2380"}, false)
	s.SetMemberAttributes(defaultID, "default", []string{"http://localhost:2379"})
}

// TestSaveMatchesEtcdFixtures compares Save with payloads the real etcd
// v3.7.3 wrote into .snap files (see testdata; the live version of this
// test is TestAgainstRealEtcd).
func TestSaveMatchesEtcdFixtures(t *testing.T) {
	tests := []struct {
		file  string
		build func(s *Store)
	}{
		{"etcd-v3.7.3-single.json", func(s *Store) {
			defaultMember(s)
			s.SetClusterVersion("3.7.0")
		}},
		{"etcd-v3.7.3-learner.json", func(s *Store) {
			defaultMember(s)
			s.AddMember(learnerID, []string{"http://127.0.0.1:23999"}, true)
			s.SetClusterVersion("3.7.0")
		}},
		{"etcd-v3.7.3-updated.json", func(s *Store) {
			defaultMember(s)
			s.AddMember(learnerID, []string{"http://127.0.0.1:23999"}, true)
			s.UpdateRaftAttributes(learnerID, []string{"http://127.0.0.1:23998", "http://127.0.0.1:23997"}, true)
			s.SetClusterVersion("3.7.0")
		}},
		{"etcd-v3.7.3-removed.json", func(s *Store) {
			defaultMember(s)
			s.AddMember(learnerID, []string{"http://127.0.0.1:23999"}, true)
			s.RemoveMember(learnerID)
			s.SetClusterVersion("3.7.0")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			s := New()
			tt.build(s)
			got, err := s.Save()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Save differs from etcd:\n got %s\nwant %s", got, want)
			}
			// Loading etcd's payload and saving it again changes nothing.
			l, err := Load(want)
			if err != nil {
				t.Fatal(err)
			}
			again, err := l.Save()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, want) {
				t.Fatalf("Load+Save differs from etcd:\n got %s\nwant %s", again, want)
			}
		})
	}
}

// history decodes the parts of a payload the ring buffer tests look at.
type history struct {
	WatcherHub struct {
		EventHistory struct {
			Queue struct {
				Events                      []*json.RawMessage
				Size, Front, Back, Capacity int
			}
			StartIndex, LastIndex uint64
		}
	}
	CurrentIndex uint64
	Stats        map[string]uint64
}

func decodeHistory(t *testing.T, b []byte) history {
	t.Helper()
	var h history
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestCountersAndEventRing(t *testing.T) {
	tests := []struct {
		name                   string
		members, published     int
		removed                int
		version                bool
		size, front, back      int
		startIndex, lastIndex  uint64
		creates, sets, current uint64
	}{
		{name: "empty", size: 0, front: 0, back: 0},
		{name: "version only", version: true, size: 1, back: 1, startIndex: 1, lastIndex: 1, sets: 1, current: 1},
		{name: "unpublished member", members: 1, size: 1, back: 1, startIndex: 1, lastIndex: 1, creates: 1, current: 1},
		{name: "just below capacity", members: 2, published: 2, removed: 994, version: true,
			size: 1000 - 1, back: 999, startIndex: 1, lastIndex: 999, creates: 996, sets: 3, current: 999},
		{name: "exactly full", members: 2, published: 2, removed: 995, version: true,
			size: 1000, front: 0, back: 0, startIndex: 1, lastIndex: 1000, creates: 997, sets: 3, current: 1000},
		{name: "one past full", members: 2, published: 2, removed: 996, version: true,
			size: 1000, front: 1, back: 1, startIndex: 2, lastIndex: 1001, creates: 998, sets: 3, current: 1001},
		{name: "wrapped", members: 3, published: 1, removed: 1200, version: true,
			size: 1000, front: 205, back: 205, startIndex: 206, lastIndex: 1205, creates: 1203, sets: 2, current: 1205},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			for i := 0; i < tt.members; i++ {
				id := uint64(0x1000 + i)
				s.AddMember(id, []string{fmt.Sprintf("http://10.0.0.%d:2380", i)}, false)
				if i < tt.published {
					s.SetMemberAttributes(id, fmt.Sprintf("m%d", i), []string{fmt.Sprintf("http://10.0.0.%d:2379", i)})
				}
			}
			for i := 0; i < tt.removed; i++ {
				s.RemoveMember(uint64(0x100000 + i))
			}
			if tt.version {
				s.SetClusterVersion("3.7.0")
			}
			b, err := s.Save()
			if err != nil {
				t.Fatal(err)
			}
			h := decodeHistory(t, b)
			q := h.WatcherHub.EventHistory.Queue
			if len(q.Events) != 1000 || q.Capacity != 1000 {
				t.Fatalf("ring has %d slots, capacity %d", len(q.Events), q.Capacity)
			}
			got := []uint64{uint64(q.Size), uint64(q.Front), uint64(q.Back),
				h.WatcherHub.EventHistory.StartIndex, h.WatcherHub.EventHistory.LastIndex,
				h.Stats["createSuccess"], h.Stats["setsSuccess"], h.CurrentIndex, h.Stats["getsFail"]}
			want := []uint64{uint64(tt.size), uint64(tt.front), uint64(tt.back),
				tt.startIndex, tt.lastIndex, tt.creates, tt.sets, tt.current, 1}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("size/front/back/start/last/creates/sets/current/getsFail = %v, want %v", got, want)
			}
			nonNil := 0
			for _, e := range q.Events {
				if e != nil {
					nonNil++
				}
			}
			if nonNil != tt.size {
				t.Fatalf("%d events, want %d", nonNil, tt.size)
			}
			if tt.version {
				last := string(*q.Events[(q.Back+999)%1000])
				if !strings.Contains(last, `"key":"/0/version"`) {
					t.Fatalf("newest event is %s, want the version", last)
				}
			}
			// Counters and events are recomputed: a round trip is exact.
			l, err := Load(b)
			if err != nil {
				t.Fatal(err)
			}
			again, err := l.Save()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, b) {
				t.Fatal("Load+Save changed the payload")
			}
		})
	}
}

func TestEmptyStore(t *testing.T) {
	want := `{"Root":{"Path":"/","CreatedIndex":0,"ModifiedIndex":0,"ExpireTime":"0001-01-01T00:00:00Z","Value":"","Children":{` +
		`"0":{"Path":"/0","CreatedIndex":0,"ModifiedIndex":0,"ExpireTime":"0001-01-01T00:00:00Z","Value":"","Children":{}},` +
		`"1":{"Path":"/1","CreatedIndex":0,"ModifiedIndex":0,"ExpireTime":"0001-01-01T00:00:00Z","Value":"","Children":{}}}},` +
		`"WatcherHub":{"EventHistory":{"Queue":{"Events":[` + strings.TrimSuffix(strings.Repeat("null,", 1000), ",") +
		`],"Size":0,"Front":0,"Back":0,"Capacity":1000},"StartIndex":0,"LastIndex":0}},"CurrentIndex":0,` +
		`"Stats":{"getsSuccess":0,"getsFail":1,"setsSuccess":0,"setsFail":0,"deleteSuccess":0,"deleteFail":0,` +
		`"updateSuccess":0,"updateFail":0,"createSuccess":0,"createFail":0,"compareAndSwapSuccess":0,` +
		`"compareAndSwapFail":0,"compareAndDeleteSuccess":0,"compareAndDeleteFail":0,"expireCount":0,"watchers":0},` +
		`"CurrentVersion":2}`
	for _, data := range [][]byte{nil, {}} {
		s, err := Load(data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Save()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("empty store:\n got %s\nwant %s", got, want)
		}
	}
}

func TestMembershipOperations(t *testing.T) {
	tests := []struct {
		name        string
		build       func(s *Store)
		members     []Member
		removed     []uint64
		version     string
		contains    []string
		notContains []string
	}{
		{
			name:        "learner without attributes",
			build:       func(s *Store) { s.AddMember(1, []string{"http://a:2380"}, true) },
			members:     []Member{{ID: 1, PeerURLs: []string{"http://a:2380"}, IsLearner: true}},
			contains:    []string{`"Value":"{\"peerURLs\":[\"http://a:2380\"],\"isLearner\":true}"`},
			notContains: []string{`attributes"`, `/0/version`},
		},
		{
			name: "promote drops isLearner",
			build: func(s *Store) {
				s.AddMember(1, []string{"http://a:2380"}, true)
				s.UpdateRaftAttributes(1, []string{"http://a:2380"}, false)
			},
			members:     []Member{{ID: 1, PeerURLs: []string{"http://a:2380"}}},
			contains:    []string{`"Value":"{\"peerURLs\":[\"http://a:2380\"]}"`},
			notContains: []string{`isLearner`},
		},
		{
			name:     "nil peer URLs encode as null",
			build:    func(s *Store) { s.AddMember(1, nil, false) },
			members:  []Member{{ID: 1}},
			contains: []string{`{\"peerURLs\":null}`},
		},
		{
			name: "name without client URLs is not written",
			build: func(s *Store) {
				s.AddMember(1, []string{"http://a:2380"}, false)
				s.SetMemberAttributes(1, "a", nil)
			},
			members:     []Member{{ID: 1, PeerURLs: []string{"http://a:2380"}, Name: "a"}},
			notContains: []string{`/attributes`},
		},
		{
			name: "empty client URLs still write the attributes",
			build: func(s *Store) {
				s.AddMember(1, []string{"http://a:2380"}, false)
				s.SetMemberAttributes(1, "a<&>", []string{})
			},
			members:  []Member{{ID: 1, PeerURLs: []string{"http://a:2380"}, Name: "a<&>", ClientURLs: []string{}}},
			contains: []string{`"Value":"{\"name\":\"a\\u003c\\u0026\\u003e\"}"`},
		},
		{
			name: "remove keeps one record and drops the member",
			build: func(s *Store) {
				s.AddMember(0xa, []string{"http://a:2380"}, false)
				s.AddMember(0xb, []string{"http://b:2380"}, false)
				s.RemoveMember(0xb)
				s.RemoveMember(0xb)
				s.RemoveMember(0xc)
				s.SetClusterVersion("3.6.0")
			},
			members: []Member{{ID: 0xa, PeerURLs: []string{"http://a:2380"}}},
			removed: []uint64{0xb, 0xc},
			version: "3.6.0",
			contains: []string{
				`"removed_members":{"Path":"/0/removed_members","CreatedIndex":2,"ModifiedIndex":2,`,
				`{"action":"create","node":{"key":"/0/removed_members/b","value":"","modifiedIndex":2,"createdIndex":2}}`,
				`"Path":"/0/removed_members/c","CreatedIndex":3,"ModifiedIndex":3,"ExpireTime":"0001-01-01T00:00:00Z","Value":"","Children":null`,
				`"Path":"/0/version","CreatedIndex":4,`,
			},
			notContains: []string{`/0/members/b`},
		},
		{
			name: "re-adding replaces raft attributes in place",
			build: func(s *Store) {
				s.AddMember(2, []string{"http://x:2380"}, false)
				s.AddMember(1, []string{"http://a:2380"}, false)
				s.AddMember(2, []string{"http://b:2380"}, true)
				s.UpdateRaftAttributes(9, []string{"http://z"}, false) // unknown: ignored
				s.SetMemberAttributes(9, "z", []string{"http://z"})    // unknown: ignored
			},
			members: []Member{
				{ID: 2, PeerURLs: []string{"http://b:2380"}, IsLearner: true},
				{ID: 1, PeerURLs: []string{"http://a:2380"}},
			},
			contains: []string{`"Path":"/0/members/2","CreatedIndex":1,`, `"Path":"/0/members/1","CreatedIndex":2,`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			tt.build(s)
			b, err := s.Save()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tt.contains {
				if !strings.Contains(string(b), c) {
					t.Errorf("payload lacks %s:\n%s", c, b)
				}
			}
			for _, c := range tt.notContains {
				if strings.Contains(string(b), c) {
					t.Errorf("payload has %s", c)
				}
			}
			l, err := Load(b)
			if err != nil {
				t.Fatal(err)
			}
			wantMembers := tt.members
			if wantMembers == nil {
				wantMembers = []Member{}
			}
			if got := s.Members(); !reflect.DeepEqual(got, wantMembers) {
				t.Errorf("Members() = %+v, want %+v", got, wantMembers)
			}
			// After Load, a name that was never written is gone.
			var loaded []Member
			for _, m := range wantMembers {
				if m.ClientURLs == nil {
					m.Name = ""
				}
				loaded = append(loaded, m)
			}
			if loaded == nil {
				loaded = []Member{}
			}
			if got := l.Members(); !reflect.DeepEqual(got, loaded) {
				t.Errorf("loaded Members() = %+v, want %+v", got, loaded)
			}
			if got := l.Removed(); !reflect.DeepEqual(got, tt.removed) {
				t.Errorf("loaded Removed() = %v, want %v", got, tt.removed)
			}
			if got := s.Removed(); !reflect.DeepEqual(got, tt.removed) {
				t.Errorf("Removed() = %v, want %v", got, tt.removed)
			}
			if got := s.ClusterVersion(); got != tt.version {
				t.Errorf("ClusterVersion() = %q, want %q", got, tt.version)
			}
			again, err := l.Save()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, b) {
				t.Fatalf("Load+Save changed the payload:\n got %s\nwant %s", again, b)
			}
		})
	}
}

func TestMembersIsACopy(t *testing.T) {
	s := New()
	s.AddMember(1, []string{"http://a"}, false)
	s.SetMemberAttributes(1, "a", []string{"http://c"})
	ms := s.Members()
	ms[0].PeerURLs[0], ms[0].ClientURLs[0] = "x", "y"
	if got := s.Members()[0]; got.PeerURLs[0] != "http://a" || got.ClientURLs[0] != "http://c" {
		t.Fatalf("Members() aliases the store: %+v", got)
	}
	urls := []string{"http://a"}
	s.AddMember(2, urls, false)
	urls[0] = "x"
	if got := s.Members()[1].PeerURLs[0]; got != "http://a" {
		t.Fatalf("AddMember kept the caller's slice: %q", got)
	}
}

func TestLoadOrdersByIndex(t *testing.T) {
	// etcd walks maps, so its member order is random; Load keeps whatever
	// order the indexes say, so Load+Save reproduces the payload.
	for _, first := range []uint64{1, 2} {
		s := New()
		s.AddMember(first, []string{"http://a"}, false)
		s.AddMember(3-first, []string{"http://b"}, false)
		s.RemoveMember(0x20 + first)
		s.RemoveMember(0x20 + 3 - first)
		b, err := s.Save()
		if err != nil {
			t.Fatal(err)
		}
		l, err := Load(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Members()[0].ID; got != first {
			t.Fatalf("first member %d, want %d", got, first)
		}
		if got := l.Removed(); got[0] != 0x20+first {
			t.Fatalf("removed %v, first should be %x", got, 0x20+first)
		}
		again, _ := l.Save()
		if !bytes.Equal(again, b) {
			t.Fatal("Load+Save changed the payload")
		}
	}
}

func TestLoadErrors(t *testing.T) {
	member := func(children string) string {
		return `{"Root":{"Path":"/","Children":{"0":{"Path":"/0","Children":{"members":{"Path":"/0/members","Children":{` +
			children + `}}}}}}}`
	}
	tests := []struct {
		name, data, err string
	}{
		{"not json", `{"Root":`, "decode payload"},
		{"no root", `{}`, "no Root"},
		{"bad member key", member(`"xyz":{"Children":{}}`), `bad member key "xyz"`},
		{"no raft attributes", member(`"a":{"Children":{"attributes":{"Value":"{}"}}}`), "has no raftAttributes"},
		{"unknown key", member(`"a":{"Children":{"raftAttributes":{"Value":"{}"},"other":{}}}`), `unknown key "other"`},
		{"bad raft attributes", member(`"a":{"Children":{"raftAttributes":{"Value":"{"}}}`), "raftAttributes"},
		{"bad attributes", member(`"a":{"Children":{"raftAttributes":{"Value":"{}"},"attributes":{"Value":"["}}}`), "attributes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("Load error %v, want one containing %q", err, tt.err)
			}
		})
	}
}

func TestLoadIgnoresNonMembershipData(t *testing.T) {
	// A v3.5-era payload may hold v2 keys, auth data and old counters; only
	// the membership survives, as in etcd v3.7's next snapshot.
	data := `{"Root":{"Path":"/","Children":{` +
		`"0":{"Path":"/0","Children":{"members":{"Path":"/0/members","CreatedIndex":7,"Children":{` +
		`"a":{"Path":"/0/members/a","CreatedIndex":7,"Children":{"raftAttributes":{"Path":"/0/members/a/raftAttributes","CreatedIndex":7,"Value":"{\"peerURLs\":[\"http://a\"]}"}}}}},` +
		`"version":{"Path":"/0/version","Value":"3.5.0"}}},` +
		`"1":{"Path":"/1","Children":{"foo":{"Path":"/1/foo","Value":"bar"}}},` +
		`"2":{"Path":"/2","Children":{"enabled":{"Path":"/2/enabled","Value":"false"}}}}},` +
		`"CurrentIndex":99,"Stats":{"setsSuccess":40}}`
	l, err := Load([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := New()
	want.AddMember(0xa, []string{"http://a"}, false)
	want.SetClusterVersion("3.5.0")
	got, _ := l.Save()
	exp, _ := want.Save()
	if !bytes.Equal(got, exp) {
		t.Fatalf("got %s\nwant %s", got, exp)
	}
}
