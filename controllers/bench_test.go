package controllers

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/benchreport"
)

// BenchmarkThousandTopics applies 1,000 Topics at once, as a GitOps sync
// does, and times them to Ready against the real API server and brokers
// of the suite (issue 41's goal: 60 s).
func BenchmarkThousandTopics(b *testing.B) {
	ns := newNamespace(b)
	mustCreate(b, brokerCluster(ns))
	ctx := context.Background()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 1000
	start := time.Now()
	for i := 0; i < n; i++ {
		t := topicObject(ns, fmt.Sprintf("bulk-%03d", i), 1)
		t.Spec.MinInSyncReplicas = nil
		if err := k8s.Create(ctx, t); err != nil {
			b.Fatal(err)
		}
	}
	applied := time.Since(start)
	lastLog := start
	for {
		var list raftkav1.TopicList
		if err := k8s.List(ctx, &list, clientInNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		ready := 0
		for _, t := range list.Items {
			if meta.IsStatusConditionTrue(t.Status.Conditions, raftkav1.ConditionReady) {
				ready++
			}
		}
		if ready == n {
			break
		}
		if time.Since(lastLog) >= 5*time.Second {
			b.Logf("%.0f s: %d of %d Topics Ready", time.Since(start).Seconds(), ready, n)
			lastLog = time.Now()
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("%d of %d Topics Ready after 10 minutes", ready, n)
		}
		time.Sleep(500 * time.Millisecond)
	}
	elapsed := time.Since(start)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(elapsed.Seconds(), "s-to-ready")
	var table benchreport.Table
	table.Add("1,000 Topics created (API requests)", fmt.Sprintf("%.1f s", applied.Seconds()))
	table.Add("1,000 Topics created until all Ready", fmt.Sprintf("%.1f s", elapsed.Seconds()))
	table.Add("operator heap in use before / after", fmt.Sprintf("%.0f MiB / %.0f MiB", float64(before.HeapInuse)/(1<<20), float64(after.HeapInuse)/(1<<20)))
	if path := os.Getenv("RAFTKA_BENCH_REPORT"); path != "" {
		err := benchreport.WriteSection(path, "operator", "Operator",
			"The controllers in-process against a real kube-apiserver and etcd (envtest) and 3 real brokers, package `controllers`.",
			&table, "Each Topic has 1 partition with replication factor 3; the controllers resync every minute, as the operator does; the heap is the test process's, which runs the manager, its caches and the test's own client.\n\nReproduce: `make bench`.")
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAutoscalerReaction measures how long the autoscaler takes from
// lag crossing the threshold to partitions and replicas updated, and what
// one sync of one ConsumerGroup costs.
func BenchmarkAutoscalerReaction(b *testing.B) {
	ns := newNamespace(b)
	mustCreate(b, brokerCluster(ns))
	ctx := context.Background()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	topic := topicObject(ns, "surge", 1)
	topic.Spec.MinInSyncReplicas = nil
	must(k8s.Create(ctx, topic))
	for {
		var got raftkav1.Topic
		_ = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "surge"}, &got)
		if meta.IsStatusConditionTrue(got.Status.Conditions, raftkav1.ConditionReady) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	labels := map[string]string{"app": "surge"}
	must(k8s.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "surge", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c:test"}}}}},
	}))
	cg := &raftkav1.ConsumerGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "surge", Namespace: ns},
		Spec: raftkav1.ConsumerGroupSpec{ClusterRef: raftkav1.ClusterReference{Name: "events"}, GroupID: "surge", Topics: []string{"surge"},
			ScaleTargetRef: &raftkav1.ScaleTargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "surge"},
			MaxReplicas:    ptr.To[int32](4), LagThreshold: ptr.To[int64](100),
			PartitionScaling: &raftkav1.PartitionScaling{Enabled: true}},
	}
	must(k8s.Create(ctx, cg))
	time.Sleep(2 * time.Second) // a first sync with no lag
	producer := brokers.Client(kgo.DefaultProduceTopic("surge"))
	recs := make([]*kgo.Record, 400)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte("x")}
	}
	must(producer.ProduceSync(ctx, recs...).FirstErr())
	crossed := time.Now()
	var partitionsAt, replicasAt time.Duration
	for replicasAt == 0 && time.Since(crossed) < 2*time.Minute {
		if partitionsAt == 0 && freshPartitionCount("surge") == 4 {
			partitionsAt = time.Since(crossed)
		}
		var d appsv1.Deployment
		_ = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "surge"}, &d)
		if ptr.Deref(d.Spec.Replicas, 0) == 4 {
			replicasAt = time.Since(crossed)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if replicasAt == 0 {
		b.Fatal("replicas never reached 4")
	}

	// One sync, measured on a reconciler of its own.
	r := &ConsumerGroupReconciler{Client: k8s, Brokers: benchClients(), SyncPeriod: time.Second}
	const syncs = 20
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	for i := 0; i < syncs; i++ {
		if _, err := r.Reconcile(ctx, ctrlRequest(ns, "surge")); err != nil {
			b.Fatal(err)
		}
	}
	perSync := time.Since(start) / syncs
	runtime.ReadMemStats(&ms1)
	var table benchreport.Table
	table.Add("lag over threshold until the partitions grew (lag period 1 s)", fmt.Sprintf("%.1f s", partitionsAt.Seconds()))
	table.Add("lag over threshold until the replicas were updated", fmt.Sprintf("%.1f s", replicasAt.Seconds()))
	table.Add("one ConsumerGroup sync (lag, group, scale; 4 partitions)", fmt.Sprintf("%.1f ms, %.0f KiB allocated", float64(perSync.Microseconds())/1000, float64(ms1.TotalAlloc-ms0.TotalAlloc)/syncs/1024))
	if path := os.Getenv("RAFTKA_BENCH_REPORT"); path != "" {
		must(benchreport.WriteSection(path, "autoscaler", "Autoscaler",
			"The ConsumerGroup controller against envtest and 3 real brokers, package `controllers`: 400 records arrive at once for a group with lagThreshold 100, max 4 replicas and partition scaling, starting from 1 partition and 1 replica.",
			&table, "The operator syncs every `--lag-period` (1 s here, 15 s by default): reaction takes two syncs, partitions first, replicas once the new partitions have leaders.\n\nReproduce: `make bench`."))
	}
}
