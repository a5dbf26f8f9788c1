package controllers

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/benchreport"
)

// BenchmarkFiveHundredTopics applies 500 Topics at once and times them to
// Ready against the real API server and brokers of the suite.
func BenchmarkFiveHundredTopics(b *testing.B) {
	if k8s == nil {
		b.Skip("needs the envtest API server")
	}
	ns := fmt.Sprintf("test-%d", nsCounter)
	nsCounter++
	ctx := context.Background()
	if err := k8s.Create(ctx, namespaceObject(ns)); err != nil {
		b.Fatal(err)
	}
	if err := k8s.Create(ctx, brokerCluster(ns)); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 500
	start := time.Now()
	for i := 0; i < n; i++ {
		t := topicObject(ns, fmt.Sprintf("bulk-%03d", i), 1)
		t.Spec.MinInSyncReplicas = nil
		if err := k8s.Create(ctx, t); err != nil {
			b.Fatal(err)
		}
	}
	applied := time.Since(start)
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
	table.Add("500 Topics created (API requests)", fmt.Sprintf("%.1f s", applied.Seconds()))
	table.Add("500 Topics created until all Ready", fmt.Sprintf("%.1f s", elapsed.Seconds()))
	table.Add("operator heap in use before / after", fmt.Sprintf("%.0f MiB / %.0f MiB", float64(before.HeapInuse)/(1<<20), float64(after.HeapInuse)/(1<<20)))
	if path := os.Getenv("RAFTKA_BENCH_REPORT"); path != "" {
		err := benchreport.WriteSection(path, "operator", "Operator",
			"The controllers in-process against a real kube-apiserver and etcd (envtest) and 3 real brokers, package `controllers`.",
			&table, "Each Topic has 1 partition with replication factor 3; the heap is the test process's, which runs the manager, its caches and the test's own client.\n\nReproduce: `make bench`.")
		if err != nil {
			b.Fatal(err)
		}
	}
}
