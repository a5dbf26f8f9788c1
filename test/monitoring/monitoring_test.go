package monitoring

import (
	"slices"
	"testing"
)

func TestMetricNamesLeaveLabelsOut(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (pod) (rate(raftka_topic_records_in_total{namespace="$namespace", raftka_cluster="$cluster"}[5m]))`:    {"raftka_topic_records_in_total"},
		`label_values(raftka_hosted_replicas{namespace="$namespace"}, raftka_cluster)`:                                 {"raftka_hosted_replicas"},
		`raftka_brokercluster_brokers{state="ready"} < ignoring (state) raftka_brokercluster_brokers{state="desired"}`: {"raftka_brokercluster_brokers"},
		`max by (namespace, raftka_cluster, topic) (raftka_growth_hold_age_seconds)`:                                   {"raftka_growth_hold_age_seconds"},
		`sum by (controller) (rate(controller_runtime_reconcile_errors_total[5m])) > 0`:                                {"controller_runtime_reconcile_errors_total"},
	} {
		if got := MetricNames(expr); !slices.Equal(got, want) {
			t.Errorf("MetricNames(%q) = %v, want %v", expr, got, want)
		}
	}
}
