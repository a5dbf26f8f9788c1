package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/specs"
	"github.com/raftka/raftka/test/monitoring"
)

// TestChartMonitoring renders the chart with helm template: without values,
// no monitoring object; with each monitoring.*.enabled, the dashboards'
// ConfigMaps with Grafana's sidecar label, the PrometheusRule, whose rules
// promtool checks and whose alerts its unit tests fire
// (test/monitoring/alerts_test.yaml), and the ServiceMonitor and PodMonitor
// that find the operator's and the brokers' metrics ports.
func TestChartMonitoring(t *testing.T) {
	root := repoRoot(t)
	helm := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("no %s: make test installs it", helm)
	}
	chart := filepath.Join(root, "charts", "raftka")
	plain, err := monitoring.Render(helm, chart)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"PrometheusRule", "ServiceMonitor", "PodMonitor"} {
		if n := len(monitoring.Of(plain, kind)); n != 0 {
			t.Errorf("%d %s rendered without monitoring values", n, kind)
		}
	}
	for _, cm := range monitoring.Of(plain, "ConfigMap") {
		t.Errorf("ConfigMap %s rendered without monitoring values", cm.GetName())
	}

	objs, err := monitoring.Render(helm, chart, monitoring.AllEnabled...)
	if err != nil {
		t.Fatal(err)
	}
	var dashboards []string
	for _, cm := range monitoring.Of(objs, "ConfigMap") {
		if cm.GetLabels()["grafana_dashboard"] == "1" {
			dashboards = append(dashboards, cm.GetName())
		}
	}
	slices.Sort(dashboards)
	if want := []string{"rk-operator-dashboard-brokers", "rk-operator-dashboard-consumer-groups", "rk-operator-dashboard-topics"}; !slices.Equal(dashboards, want) {
		t.Errorf("dashboards with label grafana_dashboard=1: %v, want %v", dashboards, want)
	}
	queries, err := monitoring.Queries(objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		if len(monitoring.MetricNames(q.Expr)) == 0 {
			t.Errorf("%s: %q names no Raftka metric", q.Where, q.Expr)
		}
	}
	monitors(t, objs)
	promtool(t, root, objs)
}

// monitors: the ServiceMonitor selects the operator's metrics Service by
// its port, the PodMonitor the brokers' pods by the labels
// internal/specs gives them, on their http port.
func monitors(t *testing.T, objs []unstructured.Unstructured) {
	t.Helper()
	sm := monitoring.Of(objs, "ServiceMonitor")
	pm := monitoring.Of(objs, "PodMonitor")
	if len(sm) != 1 || len(pm) != 1 {
		t.Fatalf("%d ServiceMonitors and %d PodMonitors, want one of each", len(sm), len(pm))
	}
	var svc *unstructured.Unstructured
	for _, s := range monitoring.Of(objs, "Service") {
		if s.GetName() == "rk-operator-metrics" {
			svc = &s
		}
	}
	if svc == nil {
		t.Fatal("no metrics Service rendered")
	}
	selector, _, _ := unstructured.NestedStringMap(sm[0].Object, "spec", "selector", "matchLabels")
	for k, v := range selector {
		if svc.GetLabels()[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which the metrics Service does not carry", k, v)
		}
	}
	endpoints, _, _ := unstructured.NestedSlice(sm[0].Object, "spec", "endpoints")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(endpoints) != 1 || len(ports) != 1 || endpoints[0].(map[string]any)["port"] != ports[0].(map[string]any)["name"] {
		t.Errorf("the ServiceMonitor's endpoints %v do not name the metrics Service's port %v", endpoints, ports)
	}
	podSelector, _, _ := unstructured.NestedStringMap(pm[0].Object, "spec", "selector", "matchLabels")
	brokerLabels := specs.Labels(&raftkav1.BrokerCluster{ObjectMeta: metav1.ObjectMeta{Name: "events"}})
	for k, v := range podSelector {
		if brokerLabels[k] != v {
			t.Errorf("the PodMonitor selects %s=%s, which broker pods do not carry (%v)", k, v, brokerLabels)
		}
	}
	podEndpoints, _, _ := unstructured.NestedSlice(pm[0].Object, "spec", "podMetricsEndpoints")
	if len(podEndpoints) != 1 || podEndpoints[0].(map[string]any)["port"] != "http" {
		t.Errorf("the PodMonitor scrapes %v, want the brokers' http port", podEndpoints)
	}
}

// promtool checks the rendered PrometheusRule's groups as a rule file and
// runs the alerts' unit tests on them.
func promtool(t *testing.T, root string, objs []unstructured.Unstructured) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("RAFTKA_TEST_DEPS") != "" {
			t.Fatal("make test installed its Debian packages but finds no promtool: apt-get install prometheus")
		}
		t.Skip("no promtool (make test-deps installs Debian's prometheus)")
	}
	rules := monitoring.Of(objs, "PrometheusRule")
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules rendered, want 1", len(rules))
	}
	spec, _, _ := unstructured.NestedMap(rules[0].Object, "spec")
	text, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests, err := os.ReadFile(filepath.Join(root, "test", "monitoring", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"rules.yaml": text, "alerts_test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run(t, dir, bin, "check", "rules", "rules.yaml")
	run(t, dir, bin, "test", "rules", "alerts_test.yaml")
}
