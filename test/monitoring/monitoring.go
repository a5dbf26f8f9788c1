// Package monitoring reads what the chart's monitoring renders to: the
// Grafana dashboards' and the PrometheusRule's PromQL queries, and the
// metric names they use, for the tests that check them against promtool
// (test/packaging) and against the metrics real brokers and a real operator
// export (controllers). alerts_test.yaml beside it is promtool's unit test
// of the alerts.
package monitoring

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// AllEnabled are helm's --set flags that turn every monitoring object on.
var AllEnabled = []string{"--set", "monitoring.dashboards.enabled=true,monitoring.prometheusRule.enabled=true," +
	"monitoring.serviceMonitor.enabled=true,monitoring.podMonitor.enabled=true"}

// Render runs helm template on the chart in chartDir and returns its
// objects.
func Render(helm, chartDir string, args ...string) ([]unstructured.Unstructured, error) {
	cmd := exec.Command(helm, append([]string{"template", "rk", chartDir, "--namespace", "raftka-system"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template: %v\n%s", err, errb.String())
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	var objs []unstructured.Unstructured
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err == io.EOF {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if obj.Object != nil {
			objs = append(objs, obj)
		}
	}
}

// Of returns the objects of a kind.
func Of(objs []unstructured.Unstructured, kind string) []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Query is one PromQL expression and where it is.
type Query struct {
	Where, Expr string
}

// dashboard is what is read of a Grafana dashboard's JSON.
type dashboard struct {
	Title  string
	Panels []struct {
		Title   string
		Targets []struct{ Expr string }
	}
	Templating struct {
		List []struct {
			Name, Type string
			Query      json.RawMessage
		}
	}
}

// Queries are the dashboards' panel and variable queries and the alerts'
// expressions among objs.
func Queries(objs []unstructured.Unstructured) ([]Query, error) {
	var out []Query
	for _, cm := range Of(objs, "ConfigMap") {
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		for file, text := range data {
			var d dashboard
			if err := json.Unmarshal([]byte(text), &d); err != nil {
				return nil, fmt.Errorf("%s %s: %v", cm.GetName(), file, err)
			}
			for _, p := range d.Panels {
				for _, target := range p.Targets {
					out = append(out, Query{Where: d.Title + " / " + p.Title, Expr: target.Expr})
				}
			}
			for _, v := range d.Templating.List {
				var q struct{ Query string }
				if v.Type == "query" && json.Unmarshal(v.Query, &q) == nil {
					out = append(out, Query{Where: d.Title + " / $" + v.Name, Expr: q.Query})
				}
			}
		}
	}
	for _, rule := range Of(objs, "PrometheusRule") {
		groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
		for _, g := range groups {
			rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
			for _, r := range rules {
				r := r.(map[string]any)
				out = append(out, Query{Where: fmt.Sprint("alert ", r["alert"]), Expr: fmt.Sprint(r["expr"])})
			}
		}
	}
	return out, nil
}

var (
	// metricName matches the metrics Raftka's queries use: the brokers'
	// and the operator's own, and controller-runtime's.
	metricName = regexp.MustCompile(`\b(?:raftka|controller_runtime)_[a-z0-9_]+\b`)
	// labelNames are where PromQL names labels rather than metrics: label
	// matchers, grouping and matching clauses, label_values' second
	// argument.
	labelNames = regexp.MustCompile(`\{[^}]*\}|\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)|,\s*[a-z_]+\s*\)\s*$`)
)

// MetricNames are the metric names expr uses.
func MetricNames(expr string) []string {
	names := metricName.FindAllString(labelNames.ReplaceAllString(expr, " "), -1)
	slices.Sort(names)
	return slices.Compact(names)
}

// Exported adds to names every series name the families expose: a
// histogram's _bucket, _sum and _count, a summary's _sum and _count.
func Exported(names map[string]bool, families map[string]*dto.MetricFamily) {
	for name, f := range families {
		names[name] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name+"_sum"], names[name+"_count"] = true, true
		}
	}
}
