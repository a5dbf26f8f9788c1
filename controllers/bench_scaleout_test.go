package controllers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/apimachinery/pkg/types"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/benchreport"
)

// probeRate produces 1 KiB records with acks=all to topic for d, 64 in
// flight, and returns the records acknowledged per second.
func probeRate(cl *brokertest.Cluster, topic string, d time.Duration) float64 {
	producer := cl.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic), kgo.MaxBufferedRecords(64))
	defer producer.Close()
	value := make([]byte, 1024)
	var acked atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	for ctx.Err() == nil {
		producer.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err == nil {
				acked.Add(1)
			}
		})
	}
	return float64(acked.Load()) / time.Since(start).Seconds()
}

// BenchmarkScaleOut grows a BrokerCluster from 3 to 5 brokers while its 3
// hold RAFTKA_BENCH_SCALE_GIB (6) GiB of partitions, replication factor
// 3, and times the rebalancer until replicas and preferred leaders are
// spread over all 5; a probe producer's acks=all rate during the moves is
// compared with its rate before, in the same run.
func BenchmarkScaleOut(b *testing.B) {
	gib := 6.0
	if v, err := strconv.ParseFloat(os.Getenv("RAFTKA_BENCH_SCALE_GIB"), 64); err == nil && v > 0 {
		gib = v
	}
	ns := newNamespace(b)
	wide := startWide(b, ns, 5)
	ctx := context.Background()
	createOn := func(topic string, partitions int) {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
		for p := 0; p < partitions; p++ {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = int32(p), []int32{int32(p % 3), int32((p + 1) % 3), int32((p + 2) % 3)}
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, wide.Client())
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	createOn("bulk", 12)
	createOn("probe", 6)
	c := brokerCluster(ns)
	c.Name, c.Spec.Rebalancing = "wide", raftkav1.RebalancingAuto
	mustCreate(b, c)

	// Fill: 256 KiB records, acks=all.
	filler := wide.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("bulk"), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.MaxBufferedBytes(64<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 256<<10)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(value) // incompressible
	records := int(gib * (1 << 30) / float64(len(value)))
	fillStart := time.Now()
	for i := 0; i < records; i++ {
		filler.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	if err := filler.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	filler.Close()
	fill := time.Since(fillStart)

	before := probeRate(wide, "probe", 20*time.Second)
	var cluster raftkav1.BrokerCluster
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "wide"}, &cluster); err != nil {
		b.Fatal(err)
	}
	cluster.Spec.Replicas = 5
	if err := k8s.Update(ctx, &cluster); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var during float64
	probed := make(chan struct{})
	go func() {
		during = probeRate(wide, "probe", 30*time.Second)
		close(probed)
	}()
	for {
		if ok, _ := balanced(b, wide, ns, 5); ok {
			break
		}
		if time.Since(start) > 25*time.Minute {
			b.Fatal("not spread over 5 brokers within 25 minutes")
		}
		time.Sleep(time.Second)
	}
	spread := time.Since(start)
	<-probed
	b.ReportMetric(spread.Seconds(), "s-to-spread")
	var table benchreport.Table
	table.Add("data on 3 brokers before the scale-out", fmt.Sprintf("%.1f GiB × 3 replicas (filled in %.0f s)", gib, fill.Seconds()))
	table.Add("3 to 5 brokers: until replicas and preferred leaders are spread", fmt.Sprintf("%.0f s", spread.Seconds()))
	table.Add("probe producer during the first 30 s of moves / before", fmt.Sprintf("%.2fx (%.0f / %.0f records/s)", during/before, during, before))
	if path := os.Getenv("RAFTKA_BENCH_REPORT"); path != "" {
		if err := benchreport.WriteSection(path, "scale-out", "Scale-out",
			"The BrokerCluster controller in-process against envtest and 5 real brokers on 127.0.0.1, package `controllers`: a cluster of 3 holding 12 partitions of 256 KiB records, replication factor 3, grows to 5.",
			&table, "The rebalancer moves at most 8 partitions at a time, each by Raft membership change (new replicas join as observers, catch up by follower fetch, are promoted, then the old ones leave); the probe is an idempotent acks=all producer of 1 KiB records, 64 in flight, on 6 other partitions of the first 3 brokers.\n\nReproduce: `make bench` (`RAFTKA_BENCH_SCALE_GIB` sets the size)."); err != nil {
			b.Fatal(err)
		}
	}
}
