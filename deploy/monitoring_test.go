package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

const rulesFile = "monitoring/cairn-rules.yaml"

// synthetic are series Prometheus makes itself rather than scraping.
var synthetic = map[string]bool{"up": true}

// TestRulesParse loads the rules with Prometheus' own parser (rule
// syntax, PromQL, label templates) and checks that they cover etcd's
// monitoring mixin and cairn's own concerns.
func TestRulesParse(t *testing.T) {
	groups := parseRules(t)
	alerts := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts[r.Alert] = true
				if r.Labels["severity"] == "" || r.Annotations["description"] == "" {
					t.Errorf("alert %s needs a severity and a description", r.Alert)
				}
			}
		}
	}
	for _, want := range []string{"CairnMembersDown", "CairnInsufficientMembers", "CairnNoLeader",
		"CairnHighNumberOfLeaderChanges", "CairnHighNumberOfFailedGRPCRequests", "CairnHighNumberOfFailedProposals",
		"CairnHighFsyncDurations", "CairnHighCommitDurations", "CairnDatabaseQuotaLowSpace",
		"CairnExcessiveDatabaseGrowth", "CairnDatabaseHighFragmentationRatio", "CairnDefragTakingLong", "CairnLearnerNotPromoted"} {
		if !alerts[want] {
			t.Errorf("no alert %s", want)
		}
	}
}

func parseRules(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%s: %v", rulesFile, err)
	}
	if groups == nil || len(groups.Groups) == 0 {
		t.Fatalf("%s: no rule groups", rulesFile)
	}
	return groups
}

// usedMetrics lists every metric name the rules and the dashboard query,
// with where each is used, and the names the rules record.
func usedMetrics(t *testing.T) (used map[string][]string, recorded map[string]bool) {
	t.Helper()
	used, recorded = map[string][]string{}, map[string]bool{}
	for _, g := range parseRules(t).Groups {
		for _, r := range g.Rules {
			where := r.Alert + r.Record
			if r.Record != "" {
				recorded[r.Record] = true
			}
			for _, m := range metricsIn(t, r.Expr, where) {
				used[m] = append(used[m], where)
			}
		}
	}
	for title, expr := range dashboardQueries(t) {
		for _, m := range metricsIn(t, expr, "dashboard: "+title) {
			used[m] = append(used[m], "dashboard: "+title)
		}
	}
	return used, recorded
}

// grafanaVars are the dashboard's variables, replaced by values PromQL
// accepts before parsing a panel's query.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$job", "cairn")

func metricsIn(t *testing.T, expr, where string) []string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVars.Replace(expr))
	if err != nil {
		t.Fatalf("%s: %q: %v", where, expr, err)
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

// dashboardQueries decodes the dashboard and returns its queries by panel.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(must(os.ReadFile("monitoring/cairn-dashboard.json")), &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || len(d.Panels) == 0 {
		t.Fatal("dashboard has no uid or no panels")
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		for i, tg := range p.Targets {
			out[fmt.Sprintf("%s #%d", p.Title, i)] = tg.Expr
		}
	}
	return out
}

// TestMonitoringMetricsExist starts a cairn member and checks that every
// metric the rules and the dashboard use is on its /metrics: a renamed or
// never-exported metric would leave an alert silently unable to fire.
func TestMonitoringMetricsExist(t *testing.T) {
	used, recorded := usedMetrics(t)
	exposed := scrapeMember(t)
	var missing []string
	for name, where := range used {
		if synthetic[name] || recorded[name] || exposed[name] {
			continue
		}
		missing = append(missing, fmt.Sprintf("%s (used by %s)", name, strings.Join(where, ", ")))
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("metrics a running member does not expose:\n%s", strings.Join(missing, "\n"))
	}
}

// scrapeMember runs a single member, writes a key and defragments (so the
// lazily created series exist), and returns the metric names on /metrics;
// histogram series count under their family name too.
func scrapeMember(t *testing.T) map[string]bool {
	t.Helper()
	bin := buildCairn(t)
	client, peer := freePort(t), freePort(t)
	clientURL, peerURL := "http://127.0.0.1:"+client, "http://127.0.0.1:"+peer
	dir := t.TempDir()
	cmd := exec.Command(bin, "--name", "m", "--data-dir", filepath.Join(dir, "m.etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL, "--initial-cluster", "m="+peerURL)
	cmd.Stderr = must(os.Create(filepath.Join(dir, "log")))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitHealthy(t, clientURL)
	ctl := filepath.Join(filepath.Dir(bin), "cairnctl")
	for _, args := range [][]string{{"put", "k", "v"}, {"get", "k"}, {"defrag"}} {
		if out, err := exec.Command(ctl, append([]string{"--endpoints", clientURL}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("cairnctl %v: %v\n%s", args, err, out)
		}
	}
	resp, err := http.Get(clientURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	names := map[string]bool{}
	sample := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)`)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := sample.FindStringSubmatch(sc.Text()); m != nil {
			names[m[1]] = true
		}
	}
	return names
}

func waitHealthy(t *testing.T, clientURL string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(clientURL + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s/health never answered 200", clientURL)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}
