package main

import (
	"context"
	"net"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// fakeCluster answers MemberList with a fixed list.
type fakeCluster struct {
	pb.UnimplementedClusterServer
	members []*pb.Member
}

func (f *fakeCluster) MemberList(context.Context, *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	return &pb.MemberListResponse{Header: &pb.ResponseHeader{}, Members: f.members}, nil
}

func startFakeCluster(t *testing.T, members ...*pb.Member) string {
	t.Helper()
	return serveFake(t, func(srv *grpc.Server) {
		pb.RegisterClusterServer(srv, &fakeCluster{members: members})
	})
}

func TestResolveEndpoints(t *testing.T) {
	listing := startFakeCluster(t,
		&pb.Member{ID: 1, ClientURLs: []string{"http://10.0.0.1:2379", "http://10.0.0.1:22379"}},
		&pb.Member{ID: 2, ClientURLs: []string{"http://10.0.0.2:2379"}},
		&pb.Member{ID: 3, ClientURLs: []string{"http://10.0.0.3:2379"}, IsLearner: true},
		&pb.Member{ID: 4}, // added but not started: no client URL yet
	)
	onlyLearners := startFakeCluster(t, &pb.Member{ID: 3, ClientURLs: []string{"http://10.0.0.3:2379"}, IsLearner: true})
	down := func() string {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer lis.Close()
		return lis.Addr().String()
	}()

	tests := []struct {
		name       string
		endpoints  string
		allMembers bool
		want       []string
		wantErr    bool
	}{
		{name: "as given", endpoints: "a:1, b:2", want: []string{"a:1", "b:2"}},
		{name: "every voting member", endpoints: listing, allMembers: true,
			want: []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379"}},
		{name: "first endpoint down, second answers", endpoints: down + "," + listing, allMembers: true,
			want: []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379"}},
		{name: "no voting member", endpoints: onlyLearners, allMembers: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := defaultGlobalConfig()
			g.endpoints, g.allMembers, g.dialTimeout = tt.endpoints, tt.allMembers, 500*time.Millisecond
			got, err := resolveEndpoints(context.Background(), g)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("endpoints %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("endpoints %v, want %v", got, tt.want)
				}
			}
		})
	}
}
