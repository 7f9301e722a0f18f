package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/cairnkv/cairn/pkg/freeport"
	"github.com/cairnkv/cairn/server/config"
	"github.com/cairnkv/cairn/server/embed"
)

// readyTimeout only keeps a broken member from hanging the test binary.
const readyTimeout = 20 * time.Second

// testMember is an in-process member with the dashboard on (unless the
// test's configure turns it off).
type testMember struct {
	name      string
	clientURL string
	m         *embed.Member
	stopped   bool
}

func (tm *testMember) stop() {
	if !tm.stopped {
		tm.stopped = true
		tm.m.Close()
	}
}

// startCluster starts n members in-process, retried on fresh ports when
// one was taken meanwhile, and stops them when the test ends.
func startCluster(t *testing.T, n int, configure func(*config.Config)) []*testMember {
	t.Helper()
	for attempt := 1; ; attempt++ {
		members, err := tryStartCluster(t, n, configure)
		if err == nil {
			for _, tm := range members {
				t.Cleanup(tm.stop)
			}
			for _, tm := range members {
				waitReady(t, tm.m)
			}
			return members
		}
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == 5 {
			t.Fatal(err)
		}
	}
}

func tryStartCluster(t *testing.T, n int, configure func(*config.Config)) ([]*testMember, error) {
	cfgs := make([]*config.Config, n)
	var initial []string
	for i := range cfgs {
		clientURL, peerURL := freeport.URL(t), freeport.URL(t)
		cfg := config.NewConfig()
		cfg.Name = "m" + string(rune('1'+i))
		cfg.Dir = t.TempDir()
		cfg.TickMs, cfg.ElectionMs = 20, 200
		cfg.Dashboard = true
		cfg.BcryptCost = 4 // bcrypt's least: its default cost is slow under -race
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
		initial = append(initial, cfg.Name+"="+peerURL.String())
		cfgs[i] = cfg
	}
	var members []*testMember
	for _, cfg := range cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
		if configure != nil {
			configure(cfg)
		}
		m, err := embed.StartMember(cfg, zap.NewNop())
		if err != nil {
			for _, tm := range members {
				tm.stop()
			}
			return nil, err
		}
		members = append(members, &testMember{name: cfg.Name, clientURL: cfg.ListenClientUrls[0].String(), m: m})
	}
	return members, nil
}

func waitReady(t *testing.T, m *embed.Member) {
	t.Helper()
	select {
	case <-m.ReadyNotify():
	case err := <-m.Err():
		t.Fatal(err)
	case <-time.After(readyTimeout):
		t.Fatal("member not ready")
	}
}

// grpcConn dials a member's client URL; closed when the test ends.
func grpcConn(t *testing.T, clientURL string) *grpc.ClientConn {
	t.Helper()
	u, _ := url.Parse(clientURL)
	conn, err := grpc.NewClient(u.Host, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// withToken is ctx carrying an auth token as etcd's clients send it.
func withToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "token", token)
}

// answer is one HTTP answer of the dashboard.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("answer %d is not JSON: %v: %s", a.status, err, a.body)
	}
}

// call sends a request to the member's client URL with an optional token.
func call(t *testing.T, method, u, token string) answer {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: body}
}

// put writes key=value through gRPC.
func put(t *testing.T, ctx context.Context, conn *grpc.ClientConn, key, value string) int64 {
	t.Helper()
	resp, err := pb.NewKVClient(conn).Put(ctx, &pb.PutRequest{Key: []byte(key), Value: []byte(value)})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}
