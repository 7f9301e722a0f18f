package v3client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"syscall"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/cairnkv/cairn/api/v3electionpb"
	"github.com/cairnkv/cairn/api/v3lockpb"
	"github.com/cairnkv/cairn/pkg/freeport"
	"github.com/cairnkv/cairn/server/config"
	"github.com/cairnkv/cairn/server/embed"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// conns are the raw gRPC clients of a member.
type conns struct {
	lock     v3lockpb.LockClient
	election v3electionpb.ElectionClient
	kv       pb.KVClient
	lease    pb.LeaseClient
	auth     pb.AuthClient
	url      string // the client URL, for HTTP
}

// startMember starts a single in-process member (with the gateway) that
// stops when the test ends, retrying on fresh ports when another test
// binary took one first.
func startMember(t *testing.T) *conns {
	t.Helper()
	for attempt := 1; ; attempt++ {
		m, clientURL, err := tryStartMember(t)
		if err == nil {
			t.Cleanup(m.Close)
			return dial(t, m, clientURL)
		}
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == 5 {
			t.Fatal(err)
		}
	}
}

func tryStartMember(t *testing.T) (*embed.Member, url.URL, error) {
	clientURL, peerURL := freeport.URL(t), freeport.URL(t)
	cfg := config.NewConfig()
	cfg.Name, cfg.Dir = "m0", t.TempDir()
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = "m0=" + peerURL.String()
	m, err := embed.StartMemberWith(cfg, zap.NewNop(), embed.Extensions{ClientServices: Install})
	return m, clientURL, err
}

func dial(t *testing.T, m *embed.Member, clientURL url.URL) *conns {
	t.Helper()
	select {
	case <-m.ReadyNotify():
	case err := <-m.Err():
		t.Fatal(err)
	case <-time.After(20 * time.Second):
		t.Fatal("member not ready")
	}
	cc, err := grpc.NewClient(clientURL.Host, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return &conns{
		lock: v3lockpb.NewLockClient(cc), election: v3electionpb.NewElectionClient(cc),
		kv: pb.NewKVClient(cc), lease: pb.NewLeaseClient(cc), auth: pb.NewAuthClient(cc),
		url: clientURL.String(),
	}
}

// testCtx bounds a test that would otherwise hang on a bug.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// grant returns a new lease of 60 seconds.
func grant(t *testing.T, ctx context.Context, c *conns) int64 {
	t.Helper()
	resp, err := c.lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 60})
	if err != nil {
		t.Fatal(err)
	}
	return resp.ID
}

// withToken is ctx carrying an auth token, as etcd's clients send it.
func withToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "token", token)
}

// keyOf is the key etcd's recipes give a lease under a name.
func keyOf(name string, lease int64) string { return fmt.Sprintf("%s/%x", name, lease) }
