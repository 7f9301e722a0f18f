package wal

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func normalEntry(t *testing.T, r *pb.InternalRaftRequest) *raftpb.Entry {
	t.Helper()
	data, err := proto.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return &raftpb.Entry{Type: raftpb.EntryNormal.Enum(), Data: data}
}

func TestMinimalEtcdVersion(t *testing.T) {
	put := &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k"), Value: []byte("v")}}
	tests := []struct {
		name    string
		ents    func(t *testing.T) []*raftpb.Entry
		want    string // "" for none found
		wantErr bool
	}{
		{name: "no entries", ents: func(*testing.T) []*raftpb.Entry { return nil }},
		{name: "put", ents: func(t *testing.T) []*raftpb.Entry { return []*raftpb.Entry{normalEntry(t, put)} }, want: "3.0.0"},
		{name: "cluster version set", ents: func(t *testing.T) []*raftpb.Entry {
			return []*raftpb.Entry{normalEntry(t, put), normalEntry(t, &pb.InternalRaftRequest{ClusterVersionSet: &membershippb.ClusterVersionSetRequest{Ver: "3.7.0"}})}
		}, want: "3.5.0"},
		{name: "downgrade version test counts its version", ents: func(t *testing.T) []*raftpb.Entry {
			return []*raftpb.Entry{normalEntry(t, &pb.InternalRaftRequest{DowngradeVersionTest: &pb.DowngradeVersionTestRequest{Ver: "3.7.0"}})}
		}, want: "3.7.0"},
		{name: "conf change v2", ents: func(t *testing.T) []*raftpb.Entry {
			return []*raftpb.Entry{normalEntry(t, put), {Type: raftpb.EntryConfChangeV2.Enum()}}
		}, want: "3.4.0"},
		{name: "conf change v1", ents: func(t *testing.T) []*raftpb.Entry {
			return []*raftpb.Entry{{Type: raftpb.EntryConfChange.Enum()}}
		}, want: "3.0.0"},
		{name: "garbage data", ents: func(t *testing.T) []*raftpb.Entry {
			return []*raftpb.Entry{{Type: raftpb.EntryNormal.Enum(), Data: []byte{0xff, 0xff, 0xff}}}
		}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, found, err := MinimalEtcdVersion(tt.ents(t))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			got := ""
			if found {
				got = v.String()
			}
			if !tt.wantErr && got != tt.want {
				t.Fatalf("MinimalEtcdVersion = %q, want %q", got, tt.want)
			}
		})
	}
}
