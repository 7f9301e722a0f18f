package e2e

import (
	"context"
	"fmt"
	"github.com/cairnkv/cairn/tests/harness"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The dashboard's browser tests drive Debian's headless Chromium through
// the DevTools protocol (chromedp) against real members started with
// --experimental-dashboard. They skip when no Chromium is installed,
// unless CAIRN_REQUIRE_CHROMIUM=1 (.ci/run installs it and sets that). Each view's screenshot is saved in
// $CAIRN_ARTIFACTS/dashboard when that is set, in docs/images/dashboard
// with UPDATE_SCREENSHOTS=1, and in the test's temporary directory
// otherwise; the test logs where.

// browserWait bounds every wait for something to show on the page. It is
// generous on purpose: it only keeps a broken page from hanging the test,
// and passing never depends on how fast the page is.
const browserWait = 20 * time.Second

// chromiumPath finds the browser or skips the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CAIRN_REQUIRE_CHROMIUM") == "1" { // .ci/run installed it
		t.Fatal("no chromium on PATH, and CAIRN_REQUIRE_CHROMIUM=1")
	}
	t.Skip("no chromium on PATH (apt-get install -y chromium); skipping the dashboard's browser tests")
	return ""
}

// cairnctl runs cairnctl against endpoint and returns its output.
func cairnctl(t *testing.T, endpoint string, args ...string) string {
	t.Helper()
	bin, err := harness.Build("cairnctl")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, append([]string{"--endpoints", endpoint}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("cairnctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screenshotDir is where the views' screenshots go (see the top).
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if a := os.Getenv("CAIRN_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "dashboard")
	} else if os.Getenv("UPDATE_SCREENSHOTS") == "1" {
		dir = filepath.Join("..", "..", "docs", "images", "dashboard")
	}
	must(t, os.MkdirAll(dir, 0o755))
	abs, _ := filepath.Abs(dir)
	t.Logf("dashboard screenshots in %s", abs)
	return dir
}

// page is one browser tab on a member's dashboard.
type page struct {
	t         *testing.T
	ctx       context.Context
	shots     string
	downloads string // where the browser saves downloaded files
}

// openBrowser starts a fresh headless Chromium (its own profile, no
// network beyond the page's member) and opens url in it.
func openBrowser(t *testing.T, url string) *page {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1500, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	p := &page{t: t, ctx: ctx, shots: screenshotDir(t), downloads: t.TempDir()}
	// The first action starts the browser, which lives as long as ctx:
	// no timeout on it.
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("browser: %v", err)
	}
	// Downloads go to the test's directory, not the user's home.
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: p.downloads,
	}); err != nil {
		t.Fatalf("browser: %v", err)
	}
	p.waitFor(`document.readyState === "complete"`, "the page to load")
	return p
}

// run performs browser actions, bounded by browserWait.
func (p *page) run(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("browser: %v", err)
	}
}

// evalJS evaluates a JavaScript expression to a value of type T.
func evalJS[T any](p *page, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, browserWait)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// waitFor polls a JavaScript condition until it holds.
func (p *page) waitFor(cond, what string) {
	p.t.Helper()
	deadline := time.Now().Add(browserWait)
	for {
		ok, err := evalJS[bool](p, "!!("+cond+")")
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			body, _ := evalJS[string](p, `document.querySelector("main").innerText.slice(0, 2000)`)
			p.t.Fatalf("waiting for %s (%s): %v; the page shows:\n%s", what, cond, err, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// text is the text of the first element matching a CSS selector.
func (p *page) text(sel string) string {
	p.t.Helper()
	s, err := evalJS[string](p, fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ""`, sel))
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

func (p *page) view(name string) {
	p.t.Helper()
	if _, err := evalJS[string](p, fmt.Sprintf(`location.hash = %q`, name)); err != nil {
		p.t.Fatal(err)
	}
	p.waitFor(fmt.Sprintf(`document.querySelector("#view-%s.active")`, name), "the "+name+" view")
}

func (p *page) setValue(sel, value string) {
	p.t.Helper()
	// chromedp.SetValue refuses to set an empty value; the page reads
	// .value on submit, so setting it is what typing would leave.
	expr := fmt.Sprintf(`(() => { const el = document.querySelector(%q); el.value = %q; el.dispatchEvent(new Event("input")); return el.value; })()`, sel, value)
	if got, err := evalJS[string](p, expr); err != nil || got != value {
		p.t.Fatalf("setting %s to %q: %q, %v", sel, value, got, err)
	}
}

func (p *page) click(sel string) {
	p.t.Helper()
	p.run(chromedp.Click(chromedp.CSS(sel)))
}

// confirm clicks the confirmation dialog's button after checking that it
// says what is going to happen.
func (p *page) confirm(mustSay string) {
	p.t.Helper()
	p.waitFor(`!document.getElementById("confirm").classList.contains("hidden")`, "the confirmation")
	if got := p.text("#confirm-text"); !strings.Contains(got, mustSay) {
		p.t.Errorf("confirmation says %q, want it to mention %q", got, mustSay)
	}
	p.click("#confirm-ok")
}

// screenshot saves the viewport as name.png.
func (p *page) screenshot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserWait)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	must(p.t, err)
	must(p.t, os.WriteFile(filepath.Join(p.shots, name+".png"), png, 0o644))
}

// query is the JavaScript expression of the first element matching a CSS
// selector.
func query(sel string) string { return "document.querySelector(" + jsString(sel) + ")" }

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string { return fmt.Sprintf("%q", s) }

func TestDashboardBrowserCluster(t *testing.T) {
	chromiumPath(t)
	c := startCluster(t, clusterOpts{args: []string{"--experimental-dashboard"}})
	lead := c.waitLeader(c.all()...)
	ep := c.members[lead].clientURL
	p := openBrowser(t, ep+"/ui/#cluster")

	// Cluster: three members, one of them the leader, with its progress.
	p.waitFor(`document.querySelectorAll("#members tr.member").length === 3 && document.querySelectorAll("#members tr.member .health.ok").length === 3`, "three healthy members")
	p.waitFor(query(`#members tr.member[data-role=leader][data-name="`+c.members[lead].name+`"]`), "the leader")
	p.waitFor(`document.querySelector("#members").innerText.includes("replicate")`, "the followers replicating")
	p.screenshot("cluster")

	// Keys: a key put with cairnctl shows in the browser.
	cairnctl(t, ep, "put", "/demo/config", `{"replicas":3,"zone":"eu-west-1"}`)
	cairnctl(t, ep, "put", "/demo/owner", "team-a")
	p.view("keys")
	p.setValue("#keys-prefix", "/demo/")
	p.click(`#keys-form button[type=submit]`)
	p.waitFor(`document.querySelector('#keys-table tr.key-row[data-key="/demo/config"]')`, "the key put with cairnctl in the key browser")
	p.click(`#keys-table tr.key-row[data-key="/demo/config"]`)
	p.waitFor(`document.querySelector("#key-value")`, "the value")
	p.run(chromedp.Click(chromedp.Search(`//div[contains(@class,"tabs")]/button[text()="JSON"]`)))
	p.waitFor(`document.querySelector("#key-value").innerText.includes('"zone": "eu-west-1"')`, "the value as pretty JSON")
	cairnctl(t, ep, "put", "/demo/config", `{"replicas":5,"zone":"eu-west-1"}`)
	p.run(chromedp.Click(chromedp.Search(`//div[contains(@class,"tabs")]/button[text()="History"]`)))
	p.waitFor(`document.querySelectorAll("#key-history tbody tr").length === 2`, "two versions in the history")
	p.screenshot("keys")

	// Pagination: 25 keys read 20 at a time.
	for i := range 25 {
		mustPut(t, c.clients[lead], fmt.Sprintf("/page/%02d", i), "v")
	}
	p.run(chromedp.SetValue(chromedp.CSS("#keys-limit"), "20"))
	p.setValue("#keys-prefix", "/page/")
	p.click(`#keys-form button[type=submit]`)
	p.waitFor(`document.querySelectorAll("#keys-table tr.key-row").length === 20 && !document.querySelector("#keys-next").disabled`, "the first page of 20")
	p.click("#keys-next")
	p.waitFor(`document.querySelectorAll("#keys-table tr.key-row").length === 5 && document.querySelector('#keys-table tr.key-row[data-key="/page/24"]') && document.querySelector("#keys-next").disabled`, "the last 5 keys on the second page")
	p.click("#keys-prev")
	p.waitFor(`document.querySelectorAll("#keys-table tr.key-row").length === 20 && document.querySelector('#keys-table tr.key-row[data-key="/page/00"]')`, "the first page again")

	// Put from the browser, after its confirmation.
	p.setValue("#put-key", "/demo/from-browser")
	p.setValue("#put-value", "hello")
	p.click(`#put-form button[type=submit]`)
	p.confirm("/demo/from-browser")
	waitCtlGet(t, ep, "/demo/from-browser", "hello")

	// Watch: a tail open on /demo/ shows a key put with cairnctl.
	p.view("watch")
	p.setValue("#watch-key", "/demo/")
	p.click("#watch-start")
	p.waitFor(`document.querySelector("#watch-state").innerText.startsWith("watching")`, "the watch to start")
	cairnctl(t, ep, "put", "/demo/watched", "v1")
	p.waitFor(`document.querySelector('#watch-events tr.watch-event[data-key="/demo/watched"]')`, "the put in the watch tail")
	// Paused, it shows nothing new; resumed, it catches up from where it was.
	p.click("#watch-pause")
	cairnctl(t, ep, "put", "/demo/while-paused", "v")
	p.click("#watch-pause")
	p.waitFor(`document.querySelector('#watch-events tr.watch-event[data-key="/demo/while-paused"]')`, "the put made while paused, after resuming")

	// The member serving the page restarts: the tail comes back and goes on
	// from the last revision it showed.
	must(t, c.members[lead].stop())
	p.waitFor(`document.querySelector("#watch-state").innerText.startsWith("disconnected")`, "the tail to notice")
	c.members[lead].restart()
	cairnctl(t, ep, "put", "/demo/after-restart", "v")
	p.waitFor(`document.querySelector('#watch-events tr.watch-event[data-key="/demo/after-restart"]')`, "the put after the restart in the tail")
	shown, err := evalJS[int](p, `document.querySelectorAll('#watch-events tr.watch-event[data-key="/demo/while-paused"]').length`)
	must(t, err)
	if shown != 1 {
		t.Errorf("the put made while paused is shown %d times after the restart, want once", shown)
	}
	p.screenshot("watch")

	// Leases: one with a key attached.
	out := cairnctl(t, ep, "lease", "grant", "600")
	var lease string
	if _, err := fmt.Sscanf(out, "lease %s granted", &lease); err != nil {
		t.Fatalf("lease grant said %q", out)
	}
	cairnctl(t, ep, "put", "--lease="+lease, "/demo/session", "alive")
	p.view("leases")
	p.waitFor(`document.querySelector("#leases-table").innerText.includes("/demo/session")`, "the lease and its key")
	p.screenshot("leases")
	id, err := strconv.ParseUint(lease, 16, 64) // cairnctl prints hex, the gateway decimal
	must(t, err)
	p.click(`#leases-table tr.lease[data-id="` + strconv.FormatUint(id, 10) + `"] button`)
	p.confirm("/demo/session")
	p.waitFor(`!document.querySelector("#leases-table").innerText.includes("/demo/session")`, "the lease revoked")
	if out := cairnctl(t, ep, "get", "/demo/session"); out != "" {
		t.Errorf("after revoking its lease, /demo/session is still there: %q", out)
	}

	// A killed member shows unreachable, then comes back. The page is
	// served by a member that stays up.
	victim := (lead + 1) % 3
	p.view("cluster")
	c.members[victim].kill()
	row := query(`#members tr.member[data-name="` + c.members[victim].name + `"]`)
	p.waitFor(row+` && `+row+`.querySelector(".health").innerText === "unreachable"`, "the killed member shown unreachable")
	p.screenshot("cluster-member-down")
	c.members[victim].restart()
	p.waitFor(row+` && `+row+`.querySelector(".health").innerText === "healthy"`, "the member back and healthy")

	// Graphs and maintenance, for the screenshots and their basics. A few
	// seconds of writes give the graphs something to show.
	for i := range 60 {
		mustPut(t, c.clients[lead], fmt.Sprintf("/load/%d", i%10), strings.Repeat("x", 100))
		time.Sleep(50 * time.Millisecond)
	}
	p.view("graphs")
	p.waitFor(`document.querySelectorAll("#charts canvas").length === 9 && document.querySelector("#charts .now").innerText !== "–"`, "the charts with data")
	p.screenshot("graphs")
	// An alarm shows in the cluster view and is disarmed in maintenance.
	mt := pb.NewMaintenanceClient(c.clients[lead].ActiveConnection())
	_, err = mt.Alarm(ctx(t), &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: c.ids[victim], Alarm: pb.AlarmType_NOSPACE})
	must(t, err)
	p.view("cluster")
	p.waitFor(row+`.innerText.includes("NOSPACE")`, "the alarm in the cluster view")
	p.view("maintenance")
	p.waitFor(`document.querySelector("#alarms-table").innerText.includes("NOSPACE")`, "the alarm in the maintenance view")
	p.screenshot("maintenance-alarm")
	p.click("#alarms-table button")
	p.confirm("NOSPACE")
	p.waitFor(`document.querySelector("#alarms-table").innerText.includes("no alarms")`, "the alarm disarmed")
	alarms, err := c.clients[lead].AlarmList(ctx(t))
	must(t, err)
	if len(alarms.Alarms) != 0 {
		t.Errorf("alarms after disarming in the browser: %v", alarms.Alarms)
	}

	// Move the leader from this member's page, whichever member leads.
	p.waitFor(`document.querySelector("#move-target").options.length === 2 && document.querySelector("#compact-rev").value !== ""`, "the maintenance view")
	target, err := evalJS[string](p, `document.querySelector("#move-target").value`)
	must(t, err)
	p.click("#move-btn")
	p.confirm("leadership")
	p.waitFor(`document.querySelector("#move-out").innerText.includes("leads now")`, "the leader moved")
	// The page's member learns of the new leader from its heartbeats.
	for deadline := time.Now().Add(clusterWait); ; time.Sleep(50 * time.Millisecond) {
		st, err := c.status(lead, failTimeout)
		if err == nil && strconv.FormatUint(st.Leader, 10) == target {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader after moving it in the browser: %v (%v), want %s", st, err, target)
		}
	}
	p.click("#defrag-btn")
	p.confirm("rewritten")
	p.waitFor(`document.querySelector("#defrag-out").innerText.startsWith("done")`, "the defragmentation to finish")
	p.click("#snapshot-btn")
	p.confirm("whole database")
	p.waitFor(`document.querySelector("#snapshot-out").innerText.startsWith("saved")`, "the snapshot download")
	waitDownload(t, p.downloads, "cairn-snapshot-")
	rev := currentRev(t, c.clients[lead])
	p.setValue("#compact-rev", strconv.FormatInt(rev, 10))
	p.click("#compact-btn")
	p.confirm("cannot be undone")
	p.waitFor(`document.querySelector("#compact-out").innerText.startsWith("compacted")`, "the compaction")
	if _, err := c.clients[lead].Get(ctx(t), "/demo/config", clientv3.WithRev(rev-1)); !sameErr(err, rpctypes.ErrCompacted) {
		t.Errorf("read below the compaction made in the browser: %v, want %v", err, rpctypes.ErrCompacted)
	}
	p.screenshot("maintenance")
}

// waitDownload waits until the browser has saved a file named prefix*
// that holds a bbolt database (its meta page's magic 0xED0CDAED).
func waitDownload(t *testing.T, dir, prefix string) {
	t.Helper()
	var matches []string
	if !harness.Poll(browserWait, 100*time.Millisecond, func() bool {
		matches, _ = filepath.Glob(filepath.Join(dir, prefix+"*.db"))
		if len(matches) != 1 {
			return false
		}
		b, err := os.ReadFile(matches[0])
		return err == nil && len(b) >= 4096 && strings.Contains(string(b[:4096]), "\xed\xda\x0c\xed")
	}) {
		t.Fatalf("no complete snapshot download in %s: %v", dir, matches)
	}
}

// waitCtlGet polls cairnctl get until key has value.
func waitCtlGet(t *testing.T, ep, key, value string) {
	t.Helper()
	var out string
	if !harness.Poll(browserWait, 100*time.Millisecond, func() bool {
		out = cairnctl(t, ep, "get", "--print-value-only", key)
		return strings.TrimSpace(out) == value
	}) {
		t.Fatalf("cairnctl get %s = %q, want %q", key, out, value)
	}
}

func TestDashboardBrowserAuth(t *testing.T) {
	chromiumPath(t)
	m := startMember(t, memberOpts{args: []string{"--experimental-dashboard", "--bcrypt-cost", "4"}})
	ep := m.clientURL
	for _, args := range [][]string{
		{"put", "/team-a/service", "a1"}, {"put", "/team-a/replicas", "3"}, {"put", "/team-b/secret", "b1"},
		{"user", "add", "root:rootpw"}, {"user", "grant-role", "root", "root"},
		{"role", "add", "team-a"}, {"role", "grant-permission", "--prefix=true", "team-a", "readwrite", "/team-a/"},
		{"user", "add", "alice:alicepw"}, {"user", "grant-role", "alice", "team-a"},
		{"auth", "enable"},
	} {
		cairnctl(t, ep, args...)
	}
	p := openBrowser(t, ep+"/ui/#keys")
	p.waitFor(`!document.getElementById("login").classList.contains("hidden")`, "the login form")

	// A wrong password is refused.
	p.setValue("#login-user", "alice")
	p.setValue("#login-password", "wrong")
	p.click("#login-submit")
	p.waitFor(`document.querySelector("#login-error").innerText.includes("authentication failed")`, "the refusal")
	p.screenshot("login-refused")

	// alice sees her prefix and nothing else.
	p.setValue("#login-password", "alicepw")
	p.click("#login-submit")
	p.waitFor(`document.getElementById("login").classList.contains("hidden") && document.querySelector("#whoami-user").innerText === "alice"`, "alice logged in")
	p.setValue("#keys-prefix", "/team-a/")
	p.click(`#keys-form button[type=submit]`)
	p.waitFor(`document.querySelectorAll("#keys-table tr.key-row").length === 2`, "alice's two keys")
	token, err := evalJS[string](p, `JSON.stringify([localStorage.length, sessionStorage.length, document.cookie])`)
	must(t, err)
	if token != `[0,0,""]` {
		t.Errorf("the page stored something (localStorage, sessionStorage, cookie) = %s; the token must stay in memory", token)
	}
	p.screenshot("keys-restricted")
	for _, prefix := range []string{"/team-b/", ""} {
		p.setValue("#keys-prefix", prefix)
		p.click(`#keys-form button[type=submit]`)
		p.waitFor(`document.querySelector("#keys-table").innerText.includes("permission denied")`, "permission denied for prefix "+jsString(prefix))
		if strings.Contains(p.text("#keys-table"), "/team-b/secret") {
			t.Errorf("alice sees /team-b/secret under prefix %q", prefix)
		}
	}
	p.view("auth")
	p.waitFor(`document.querySelector("#auth-note").innerText.includes("root only")`, "users and roles hidden from alice")

	// root sees users and roles.
	p.click("#whoami button")
	p.setValue("#login-user", "root")
	p.setValue("#login-password", "rootpw")
	p.click("#login-submit")
	p.waitFor(`document.querySelector("#whoami-user") && document.querySelector("#whoami-user").innerText === "root"`, "root logged in")
	p.view("auth")
	p.waitFor(`document.querySelector("#users-table").innerText.includes("alice") && document.querySelector("#roles-table").innerText.includes("prefix \"/team-a/\"")`, "users and roles for root")
	p.screenshot("auth")
}
