package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/goleak"

	"github.com/cairnkv/cairn/server/errs"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeHealth is a member as the endpoints see it.
type fakeHealth struct {
	mu       sync.Mutex
	leader   uint64
	alarms   []*pb.AlarmMember
	linErr   error
	localErr error
	learner  bool
}

func (f *fakeHealth) Leader() uint64 { f.mu.Lock(); defer f.mu.Unlock(); return f.leader }

func (f *fakeHealth) Alarms() []*pb.AlarmMember { f.mu.Lock(); defer f.mu.Unlock(); return f.alarms }

func (f *fakeHealth) LinearizableReadCheck(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.linErr
}

// fullHealth also offers the optional checks.
type fullHealth struct{ *fakeHealth }

func (f fullHealth) SerializableReadCheck(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.localErr
}

func (f fullHealth) IsLearner() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.learner }

func get(t *testing.T, h http.Handler, target string) (int, string, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body), rec.Result().Header
}

// versionedHealth reports cluster and storage versions.
type versionedHealth struct {
	fakeHealth
	cluster, storage string
}

func (v *versionedHealth) ClusterVersion() string { return v.cluster }
func (v *versionedHealth) StorageVersion() string { return v.storage }

func TestVersion(t *testing.T) {
	tests := []struct {
		name string
		h    Health
		want string
	}{
		{"decided", &versionedHealth{cluster: "3.7.0", storage: "3.7.0"}, `{"etcdserver":"3.7.1","etcdcluster":"3.7.0","storage":"3.7.0"}`},
		{"downgrading", &versionedHealth{cluster: "3.6.0", storage: "3.6.0"}, `{"etcdserver":"3.7.1","etcdcluster":"3.6.0","storage":"3.6.0"}`},
		{"undecided", &versionedHealth{}, `{"etcdserver":"3.7.1","etcdcluster":"not_decided","storage":"not_decided"}`},
		{"no reporter", &fakeHealth{leader: 1}, `{"etcdserver":"3.7.1","etcdcluster":"not_decided","storage":"not_decided"}`},
	}
	for _, tt := range tests {
		h := NewHandler(tt.h, nil)
		code, body, hdr := get(t, h, "/version")
		if code != http.StatusOK || body != tt.want {
			t.Errorf("%s: %d %q, want %q", tt.name, code, body, tt.want)
		}
		if hdr.Get("Content-Type") != "application/json" {
			t.Errorf("%s: content type %q", tt.name, hdr.Get("Content-Type"))
		}
	}
	h := NewHandler(&fakeHealth{leader: 1}, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/version", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET" {
		t.Fatalf("POST: %d allow=%q", rec.Code, rec.Header().Get("Allow"))
	}
}

func TestHealth(t *testing.T) {
	nospace := &pb.AlarmMember{MemberID: 1, Alarm: pb.AlarmType_NOSPACE}
	corrupt := &pb.AlarmMember{MemberID: 1, Alarm: pb.AlarmType_CORRUPT}
	tests := []struct {
		name     string
		member   *fakeHealth
		target   string
		wantCode int
		wantBody string
	}{
		{"healthy", &fakeHealth{leader: 1}, "/health", 200, `{"health":"true","reason":""}`},
		{"nospace", &fakeHealth{leader: 1, alarms: []*pb.AlarmMember{nospace}}, "/health", 503, `{"health":"false","reason":"ALARM NOSPACE"}` + "\n"},
		{"nospace excluded", &fakeHealth{leader: 1, alarms: []*pb.AlarmMember{nospace}}, "/health?exclude=NOSPACE", 200, `{"health":"true","reason":""}`},
		{"corrupt not excluded", &fakeHealth{leader: 1, alarms: []*pb.AlarmMember{nospace, corrupt}}, "/health?exclude=NOSPACE", 503, `{"health":"false","reason":"ALARM CORRUPT"}` + "\n"},
		{"no leader", &fakeHealth{}, "/health", 503, `{"health":"false","reason":"RAFT NO LEADER"}` + "\n"},
		{"no leader serializable", &fakeHealth{}, "/health?serializable=true", 200, `{"health":"true","reason":""}`},
		{"read fails", &fakeHealth{leader: 1, linErr: errs.ErrTimeout}, "/health", 503, `{"health":"false","reason":"RANGE ERROR:etcdserver: request timed out"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := get(t, NewHandler(tt.member, nil), tt.target)
			if code != tt.wantCode || body != tt.wantBody {
				t.Fatalf("got %d %q, want %d %q", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

func TestHealthSerializableUsesLocalRead(t *testing.T) {
	f := &fakeHealth{linErr: errs.ErrNoLeader, localErr: nil}
	code, _, _ := get(t, NewHandler(fullHealth{f}, nil), "/health?serializable=true")
	if code != 200 {
		t.Fatalf("serializable health with a working local read: %d", code)
	}
	f.localErr = errs.ErrStopped
	code, body, _ := get(t, NewHandler(fullHealth{f}, nil), "/health?serializable=true")
	if code != 503 || !strings.Contains(body, "RANGE ERROR:etcdserver: server stopped") {
		t.Fatalf("%d %q", code, body)
	}
}

func TestLivezReadyz(t *testing.T) {
	corrupt := []*pb.AlarmMember{{MemberID: 1, Alarm: pb.AlarmType_CORRUPT}}
	tests := []struct {
		name     string
		member   http.Handler
		target   string
		wantCode int
		wantBody string
	}{
		{"livez", NewHandler(fullHealth{&fakeHealth{}}, nil), "/livez", 200, "ok\n"},
		{"livez verbose", NewHandler(fullHealth{&fakeHealth{}}, nil), "/livez?verbose", 200, "[+]serializable_read ok\nok\n"},
		{"livez fails", NewHandler(fullHealth{&fakeHealth{localErr: errs.ErrStopped}}, nil), "/livez", 503,
			"[-]serializable_read failed: etcdserver: server stopped\n\n"},
		{"livez ignores quorum loss", NewHandler(fullHealth{&fakeHealth{linErr: errs.ErrTimeout}}, nil), "/livez", 200, "ok\n"},
		{"readyz verbose", NewHandler(fullHealth{&fakeHealth{leader: 1}}, nil), "/readyz?verbose", 200,
			"[+]data_corruption ok\n[+]serializable_read ok\n[+]linearizable_read ok\n[+]non_learner ok\nok\n"},
		{"readyz without optional checks", NewHandler(&fakeHealth{leader: 1}, nil), "/readyz?verbose", 200,
			"[+]data_corruption ok\n[+]linearizable_read ok\nok\n"},
		{"readyz fails", NewHandler(fullHealth{&fakeHealth{alarms: corrupt, linErr: errs.ErrTimeout, learner: true}}, nil), "/readyz", 503,
			"[-]data_corruption failed: alarm activated: CORRUPT\n[+]serializable_read ok\n" +
				"[-]linearizable_read failed: etcdserver: request timed out\n[-]non_learner failed: not supported for learner\n\n"},
		{"readyz exclude", NewHandler(fullHealth{&fakeHealth{linErr: errs.ErrTimeout}}, nil),
			"/readyz?exclude=linearizable_read&exclude=unknown_check&verbose", 200,
			"[+]data_corruption ok\n[+]serializable_read ok\n[+]non_learner ok\nok\n"},
		{"readyz single check", NewHandler(fullHealth{&fakeHealth{linErr: errs.ErrTimeout}}, nil), "/readyz/linearizable_read", 503,
			"[-]linearizable_read failed: etcdserver: request timed out\n\n"},
		{"readyz single check ok", NewHandler(fullHealth{&fakeHealth{linErr: errs.ErrTimeout}}, nil), "/readyz/data_corruption?verbose", 200,
			"[+]data_corruption ok\nok\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := get(t, tt.member, tt.target)
			if code != tt.wantCode || body != tt.wantBody {
				t.Fatalf("got %d %q, want %d %q", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

func TestMetrics(t *testing.T) {
	h := NewHandler(&fakeHealth{leader: 1}, nil)
	get(t, h, "/health")
	code, body, _ := get(t, h, "/metrics")
	if code != 200 || !strings.Contains(body, "etcd_server_health_success") {
		t.Fatalf("%d, metrics without etcd_server_health_success", code)
	}
}
