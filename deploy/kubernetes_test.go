package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	"github.com/cairnkv/cairn/server/config"
)

// kustomization is the part of kustomize's file format the manifests use.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors"`
	} `json:"labels,omitempty"`
	Resources []string `json:"resources"`
	Patches   []struct {
		Path   string `json:"path"`
		Target struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"target"`
	} `json:"patches,omitempty"`
}

// decodeStrict decodes a YAML file into out, failing on any field out's
// type does not have (a misspelt or misplaced key would otherwise be
// dropped silently by the API server's lenient decoding).
func decodeStrict(t *testing.T, path string, out any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// baseManifests decodes every resource of the kustomize base into its
// Kubernetes type, by kind.
type baseManifests struct {
	statefulSet *appsv1.StatefulSet
	services    map[string]*corev1.Service
	pdb         *policyv1.PodDisruptionBudget
}

func loadBase(t *testing.T) baseManifests {
	t.Helper()
	var k kustomization
	decodeStrict(t, "kubernetes/base/kustomization.yaml", &k)
	m := baseManifests{services: map[string]*corev1.Service{}}
	for _, res := range k.Resources {
		path := filepath.Join("kubernetes/base", res)
		var meta struct {
			Kind string `json:"kind"`
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &meta); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch meta.Kind {
		case "StatefulSet":
			m.statefulSet = &appsv1.StatefulSet{}
			decodeStrict(t, path, m.statefulSet)
		case "Service":
			s := &corev1.Service{}
			decodeStrict(t, path, s)
			m.services[s.Name] = s
		case "PodDisruptionBudget":
			m.pdb = &policyv1.PodDisruptionBudget{}
			decodeStrict(t, path, m.pdb)
		default:
			t.Fatalf("%s: unexpected kind %q", path, meta.Kind)
		}
	}
	return m
}

// TestKubernetesBase decodes the base strictly and checks that its parts
// fit together: three members with stable names, a headless peer Service
// the StatefulSet names, a client Service and a PDB selecting the pods,
// probes on /livez and /readyz, a volume for the data dir.
func TestKubernetesBase(t *testing.T) {
	m := loadBase(t)
	ss := m.statefulSet
	if ss == nil || m.pdb == nil || len(m.services) != 2 {
		t.Fatalf("base has StatefulSet %v, PDB %v, %d Services; want all", ss != nil, m.pdb != nil, len(m.services))
	}
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", ss.Spec.Replicas)
	}
	peer := m.services[ss.Spec.ServiceName]
	if peer == nil || peer.Spec.ClusterIP != corev1.ClusterIPNone || !peer.Spec.PublishNotReadyAddresses {
		t.Errorf("serviceName %q must be a headless Service publishing not-ready pods", ss.Spec.ServiceName)
	}
	pods := ss.Spec.Template.Labels
	for name, s := range m.services {
		if !selects(s.Spec.Selector, pods) {
			t.Errorf("Service %s selects %v, pods are %v", name, s.Spec.Selector, pods)
		}
	}
	if !selects(m.pdb.Spec.Selector.MatchLabels, pods) || !selects(ss.Spec.Selector.MatchLabels, pods) {
		t.Errorf("PDB or StatefulSet selector does not match the pod labels %v", pods)
	}
	if m.pdb.Spec.MaxUnavailable == nil || m.pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB maxUnavailable %v, want 1 (two of three keep the quorum)", m.pdb.Spec.MaxUnavailable)
	}
	c := ss.Spec.Template.Spec.Containers[0]
	for probe, want := range map[string]string{"liveness": "/livez", "readiness": "/readyz", "startup": "/livez"} {
		p := map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe}[probe]
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || p.HTTPGet.Port.String() != "metrics" {
			t.Errorf("%s probe %+v, want GET %s on the metrics port", probe, p, want)
		}
	}
	if len(ss.Spec.VolumeClaimTemplates) != 1 || len(c.VolumeMounts) == 0 || c.VolumeMounts[0].Name != ss.Spec.VolumeClaimTemplates[0].Name {
		t.Errorf("the data dir must live on the volume claim template")
	}
	if !strings.HasPrefix(flagValue(t, c.Args, "data-dir"), c.VolumeMounts[0].MountPath+"/") {
		t.Errorf("--data-dir %q is not on the volume mounted at %s", flagValue(t, c.Args, "data-dir"), c.VolumeMounts[0].MountPath)
	}
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

func flagValue(t *testing.T, args []string, name string) string {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	t.Fatalf("no --%s in %v", name, args)
	return ""
}

// tlsStatefulSet is the base StatefulSet with the tls overlay's patch
// applied the way kustomize applies it (a strategic merge patch).
func tlsStatefulSet(t *testing.T) *appsv1.StatefulSet {
	t.Helper()
	var k kustomization
	decodeStrict(t, "kubernetes/tls/kustomization.yaml", &k)
	if !slices.Equal(k.Resources, []string{"../base"}) || len(k.Patches) != 1 || k.Patches[0].Target.Kind != "StatefulSet" {
		t.Fatalf("tls overlay: %+v", k)
	}
	var patch appsv1.StatefulSet
	decodeStrict(t, filepath.Join("kubernetes/tls", k.Patches[0].Path), &patch)
	base, err := yaml.YAMLToJSON(must(os.ReadFile("kubernetes/base/statefulset.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	patchJSON, err := yaml.YAMLToJSON(must(os.ReadFile(filepath.Join("kubernetes/tls", k.Patches[0].Path))))
	if err != nil {
		t.Fatal(err)
	}
	merged, err := strategicpatch.StrategicMergePatch(base, patchJSON, appsv1.StatefulSet{})
	if err != nil {
		t.Fatal(err)
	}
	var ss appsv1.StatefulSet
	if err := yaml.UnmarshalStrict(merged, &ss); err != nil {
		t.Fatal(err)
	}
	return &ss
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestKubernetesFlagsAreCairns runs the command line and ETCD_* variables
// each member of each variant would get through cairn's own flag parsing
// and validation: an unknown flag, a bad value or an inconsistent cluster
// definition fails here rather than in a crash-looping pod.
func TestKubernetesFlagsAreCairns(t *testing.T) {
	variants := map[string]*appsv1.StatefulSet{"base": loadBase(t).statefulSet, "tls": tlsStatefulSet(t)}
	for name, ss := range variants {
		for i := range int(*ss.Spec.Replicas) {
			pod := fmt.Sprintf("%s-%d", ss.Name, i)
			t.Run(name+"/"+pod, func(t *testing.T) {
				args, environ := containerCommandLine(t, ss.Spec.Template.Spec.Containers[0], pod, "prod")
				cfg, err := config.Parse(args, environ)
				if err != nil {
					t.Fatalf("cairn refuses %v with %v: %v", args, environ, err)
				}
				if cfg.Name != pod {
					t.Errorf("--name %q, want %q", cfg.Name, pod)
				}
				if members, err := cfg.InitialClusterMap(); err != nil || members[pod] == nil {
					t.Errorf("member %s missing from --initial-cluster", pod)
				}
				want := "http"
				if name == "tls" {
					want = "https"
				}
				if got := cfg.AdvertisePeerUrls[0].Scheme; got != want {
					t.Errorf("peer scheme %s, want %s", got, want)
				}
			})
		}
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Z_]+)\)`)

// containerCommandLine is what the kubelet would run in pod: the args with
// $(VAR) references expanded, and the environment (downward API fields
// filled in for pod).
func containerCommandLine(t *testing.T, c corev1.Container, pod, namespace string) ([]string, []string) {
	t.Helper()
	vars := map[string]string{}
	var environ []string
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			v = map[string]string{"metadata.name": pod, "metadata.namespace": namespace}[e.ValueFrom.FieldRef.FieldPath]
			if v == "" {
				t.Fatalf("env %s: unexpected field %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		}
		vars[e.Name] = v
		environ = append(environ, e.Name+"="+v)
	}
	var args []string
	for _, a := range c.Args {
		expanded := varRef.ReplaceAllStringFunc(a, func(ref string) string {
			name := varRef.FindStringSubmatch(ref)[1]
			v, ok := vars[name]
			if !ok {
				t.Errorf("%s: $(%s) is not defined in env", a, name)
			}
			return v
		})
		args = append(args, expanded)
	}
	if len(c.Command) != 1 || c.Command[0] != "/usr/local/bin/cairn" {
		t.Errorf("command %v, want the image's /usr/local/bin/cairn", c.Command)
	}
	return args, environ
}
