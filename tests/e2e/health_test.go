package e2e

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cairnkv/cairn/tests/harness"
)

// healthCase is one probe of a health endpoint and etcd v3.7's exact
// answer to it.
type healthCase struct {
	path        string
	code        int
	body        string
	contentType string
}

// sameBody compares bodies line by line, in any order: etcd runs the
// checks of /livez and /readyz from a map, so their report lines come in
// no fixed order.
func sameBody(got, want string) bool {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

const (
	healthyBody = `{"health":"true","reason":""}`
	textPlain   = "text/plain; charset=utf-8"
	readyzOK    = "[+]data_corruption ok\n[+]serializable_read ok\n[+]linearizable_read ok\n[+]non_learner ok\nok\n"
)

// checkHealth probes every case on the member serving baseURL.
func checkHealth(t *testing.T, baseURL string, cases []healthCase) {
	t.Helper()
	for _, tc := range cases {
		req, err := http.NewRequestWithContext(ctx(t), http.MethodGet, baseURL+tc.path, nil)
		must(t, err)
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		must(t, err)
		if resp.StatusCode != tc.code || !sameBody(string(body), tc.body) || resp.Header.Get("Content-Type") != tc.contentType {
			t.Errorf("GET %s = %d %q (%s), want %d %q (%s)", tc.path, resp.StatusCode, body,
				resp.Header.Get("Content-Type"), tc.code, tc.body, tc.contentType)
		}
	}
}

// waitHealth polls path on baseURL until it answers code.
func waitHealth(t *testing.T, baseURL, path string, code int) {
	t.Helper()
	var got int
	var body string
	if !harness.Poll(clusterWait, 100*time.Millisecond, func() bool {
		got, body = httpGet(t, baseURL+path)
		return got == code
	}) {
		t.Fatalf("GET %s still answers %d %q after %v, want %d", path, got, body, clusterWait, code)
	}
}

func TestHealthHealthyAndLeaderless(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	url := c.members[0].clientURL
	t.Run("healthy", func(t *testing.T) {
		checkHealth(t, url, []healthCase{
			{"/health", 200, healthyBody, textPlain},
			{"/health?serializable=true", 200, healthyBody, textPlain},
			{"/health?exclude=NOSPACE", 200, healthyBody, textPlain},
			{"/livez", 200, "ok\n", textPlain},
			{"/livez?verbose", 200, "[+]serializable_read ok\nok\n", textPlain},
			{"/readyz", 200, "ok\n", textPlain},
			{"/readyz?verbose", 200, readyzOK, textPlain},
			{"/readyz?exclude=linearizable_read&verbose", 200, "[+]data_corruption ok\n[+]serializable_read ok\n[+]non_learner ok\nok\n", textPlain},
			{"/readyz/non_learner", 200, "ok\n", textPlain},
		})
	})

	for _, i := range []int{1, 2} {
		if err := gracefulExit(c.members[i].stop()); err != nil {
			t.Fatalf("stopping m%d: %v", i, err)
		}
	}
	waitHealth(t, url, "/health", http.StatusServiceUnavailable)
	t.Run("leaderless", func(t *testing.T) {
		cases := []healthCase{
			{"/health", 503, `{"health":"false","reason":"RAFT NO LEADER"}` + "\n", textPlain},
			{"/health?serializable=true", 200, healthyBody, textPlain},
			{"/livez?verbose", 200, "[+]serializable_read ok\nok\n", textPlain},
			{"/readyz?exclude=linearizable_read", 200, "ok\n", textPlain},
		}
		if !testing.Short() { // the linearizable read waits out the request timeout
			cases = append(cases, healthCase{"/readyz", 503, "[+]data_corruption ok\n[+]serializable_read ok\n" +
				"[-]linearizable_read failed: " + rpctypes.ErrTimeout.Error() + "\n[+]non_learner ok\n\n", textPlain})
		}
		checkHealth(t, url, cases)
	})
}

func TestHealthNoSpaceAlarm(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 1, args: []string{"--quota-backend-bytes", "300000"}})
	cli := c.clients[0]
	value := strings.Repeat("x", 50_000)
	for i := 0; ; i++ {
		_, err := cli.Put(ctx(t), "k"+strings.Repeat("x", i), value)
		if err != nil {
			wantErr(t, err, rpctypes.ErrNoSpace)
			break
		}
		if i > 100 {
			t.Fatal("no NOSPACE alarm after 5 MB of puts with a 300 kB quota")
		}
	}
	alarmed := `{"health":"false","reason":"ALARM NOSPACE"}` + "\n"
	checkHealth(t, c.members[0].clientURL, []healthCase{
		{"/health", 503, alarmed, textPlain},
		{"/health?serializable=true", 503, alarmed, textPlain},
		{"/health?exclude=NOSPACE", 200, healthyBody, textPlain},
		{"/livez?verbose", 200, "[+]serializable_read ok\nok\n", textPlain},
		{"/readyz?verbose", 200, readyzOK, textPlain},
	})
}
