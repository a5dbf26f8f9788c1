package controllers

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/test/monitoring"
)

// TestChartQueriesNameMetricsTheBrokersAndOperatorExport renders the
// chart's dashboards and alerts with helm template and checks that every
// metric their queries name is exported: by the suite's real brokers,
// scraped on /metrics, or by the operator's controllers, read from the
// registry the operator serves. A workload makes the metrics that appear
// only with one: records produced and fetched, a group with lag, and a
// ConsumerGroup whose autoscaler grows its topic while the group holds the
// growth (ordered growth's barrier).
func TestChartQueriesNameMetricsTheBrokersAndOperatorExport(t *testing.T) {
	ns := newNamespace(t)
	helm, err := filepath.Abs(filepath.Join("..", "bin", "helm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("no %s: make test installs it", helm)
	}
	objs, err := monitoring.Render(helm, filepath.Join("..", "charts", "raftka"), monitoring.AllEnabled...)
	if err != nil {
		t.Fatal(err)
	}
	queries, err := monitoring.Queries(objs)
	if err != nil {
		t.Fatal(err)
	}
	monitoredWorkload(t, ns)

	var missing []string
	eventually2(t, 90*time.Second, "every metric the dashboards and alerts name to be exported", func() (bool, string) {
		exported := exportedMetrics(t)
		missing = missing[:0]
		for _, q := range queries {
			for _, name := range monitoring.MetricNames(q.Expr) {
				if !exported[name] {
					missing = append(missing, fmt.Sprintf("%s (%s)", name, q.Where))
				}
			}
		}
		return len(missing) == 0, "not exported: " + strings.Join(missing, ", ")
	})
}

// monitoredWorkload: 200 records on a topic of one partition, a group
// that committed none of them and has read some, and a ConsumerGroup that
// wants more consumers than partitions, so its autoscaler grows the topic.
func monitoredWorkload(t *testing.T, ns string) {
	mustCreate(t, brokerCluster(ns))
	topic := topicObject(ns, "monitored", 1)
	mustCreate(t, topic)
	readyIs(t, ns, "monitored", metav1.ConditionTrue, raftkav1.ReasonCreated)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	producer := brokers.Client(kgo.DefaultProduceTopic("monitored"))
	for i := range 200 {
		if err := producer.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i % 16)), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offsets := kadm.Offsets{}
	offsets.AddOffset("monitored", 0, 0, -1)
	if _, err := kadm.NewClient(brokers.Client()).CommitOffsets(ctx, "monitored-group", offsets); err != nil {
		t.Fatal(err)
	}
	reader := brokers.Client(kgo.ConsumeTopics("monitored"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if fetches := reader.PollRecords(ctx, 10); fetches.NumRecords() == 0 {
		t.Fatalf("read nothing back: %v", fetches.Errors())
	}
	mustCreate(t, workerDeployment(ns, "monitored"))
	mustCreate(t, &raftkav1.ConsumerGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "monitored", Namespace: ns},
		Spec: raftkav1.ConsumerGroupSpec{ClusterRef: raftkav1.ClusterReference{Name: "events"}, GroupID: "monitored-group", Topics: []string{"monitored"},
			ScaleTargetRef: &raftkav1.ScaleTargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "monitored"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: ptr.To[int32](4), LagThreshold: ptr.To[int64](50),
			PartitionScaling: &raftkav1.PartitionScaling{Enabled: true, MaxPartitions: ptr.To[int32](2)}},
	})
}

// exportedMetrics are the series names the suite's brokers serve on
// /metrics and the operator's registry holds.
func exportedMetrics(t *testing.T) map[string]bool {
	names := map[string]bool{}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	monitoring.Exported(names, byName)
	for _, b := range brokers.Brokers {
		resp, err := http.Get("http://" + b.HTTPAddr + "/metrics")
		if err != nil {
			continue // a broker another test stopped a moment
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		scraped, err := parser.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("broker %s's /metrics: %v", b.HTTPAddr, err)
		}
		monitoring.Exported(names, scraped)
	}
	return names
}
