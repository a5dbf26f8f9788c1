package controllers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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
// spread over all 5, then back to 3; a probe producer's acks=all rate
// during the first moves is compared with its rate just before. It does
// so once per follower replication throttle, in the same run, so that the
// broker's default can be judged against no bound side by side.
func BenchmarkScaleOut(b *testing.B) {
	gib := 6.0
	if v, err := strconv.ParseFloat(os.Getenv("RAFTKA_BENCH_SCALE_GIB"), 64); err == nil && v > 0 {
		gib = v
	}
	ns := newNamespace(b)
	wide := startWide(b, ns, brokertest.Options{Brokers: 5})
	ctx := context.Background()
	onFirstThree := func(partitions int) [][]int32 {
		var assignment [][]int32
		for p := 0; p < partitions; p++ {
			assignment = append(assignment, []int32{int32(p % 3), int32((p + 1) % 3), int32((p + 2) % 3)})
		}
		return assignment
	}
	wide.CreateTopicOn("bulk", onFirstThree(12))
	wide.CreateTopicOn("probe", onFirstThree(6))
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

	resize := func(replicas int32) time.Time {
		resizeWide(b, ns, replicas)
		return time.Now()
	}
	awaitBalanced := func(n int32, start time.Time) time.Duration {
		for {
			if ok, _ := balanced(b, wide, ns, n); ok {
				return time.Since(start)
			}
			if time.Since(start) > 25*time.Minute {
				b.Fatalf("not spread over %d brokers within 25 minutes", n)
			}
			time.Sleep(time.Second)
		}
	}

	var table benchreport.Table
	table.Add("data on 3 brokers before the scale-out", fmt.Sprintf("%.1f GiB × 3 replicas (filled in %.0f s)", gib, fill.Seconds()))
	for _, throttle := range chosenThrottles(b) {
		setClusterThrottle(b, wide, throttle.bytesPerSecond)
		if throttle.bytesPerSecond < 0 {
			awaitOperatorThrottle(b, ns)
		} else {
			awaitHandover(b, ns)
			setClusterThrottle(b, wide, throttle.bytesPerSecond) // in case a write of the operator's crossed it
		}
		before := probeRate(wide, "probe", 20*time.Second)
		start := resize(5)
		var during float64
		probed := make(chan struct{})
		go func() {
			during = probeRate(wide, "probe", 30*time.Second)
			close(probed)
		}()
		chosen := watchOperatorThrottle(b, ns, probed)
		spread := awaitBalanced(5, start)
		<-probed
		drained := awaitBalanced(3, resize(3))
		if throttle.bytesPerSecond < 0 {
			table.Add(throttle.name+": rates the operator chose during the first 30 s of moves", chosen())
		}
		b.ReportMetric(spread.Seconds(), "s-to-spread-"+throttle.metric)
		table.Add(throttle.name+": 3 to 5 brokers, until replicas and preferred leaders are spread", fmt.Sprintf("%.0f s", spread.Seconds()))
		table.Add(throttle.name+": probe producer during the first 30 s of moves / before", fmt.Sprintf("%.2fx (%.0f / %.0f records/s)", during/before, during, before))
		table.Add(throttle.name+": 5 back to 3 brokers, until drained", fmt.Sprintf("%.0f s", drained.Seconds()))
	}
	if path := os.Getenv("RAFTKA_BENCH_REPORT"); path != "" {
		if err := benchreport.WriteSection(path, "scale-out", "Scale-out",
			"The BrokerCluster controller in-process against envtest and 5 real brokers on 127.0.0.1, package `controllers`: a cluster of 3 holding 12 partitions of 256 KiB records, replication factor 3, grows to 5 and shrinks back to 3, once per follower replication throttle (`follower.replication.throttled.rate` for every broker), in one run.",
			&table, "The rebalancer moves at most 8 partitions at a time, each by Raft membership change (new replicas join as observers, catch up by follower fetch at most at the throttle's rate per receiving broker, are promoted, then the old ones leave); the probe is an idempotent acks=all producer of 1 KiB records, 64 in flight, on 6 other partitions of the first 3 brokers.\n\nReproduce: `make bench` (`RAFTKA_BENCH_SCALE_GIB` sets the size, `RAFTKA_BENCH_SCALE_THROTTLES=auto,unbounded` picks throttles by name)."); err != nil {
			b.Fatal(err)
		}
	}
}

// scaleOutThrottles are the follower replication throttles BenchmarkScaleOut
// compares: none, the broker's default, and a tighter one.
type scaleOutThrottle struct {
	name, metric   string
	bytesPerSecond int64
}

var scaleOutThrottles = []scaleOutThrottle{
	{"automatic (the operator's choice)", "auto", -1},
	{"no throttle", "unbounded", 0},
	{"throttle 100 MiB/s", "100MiB", 100 << 20},
	{"throttle 40 MiB/s", "40MiB", 40 << 20},
	{"throttle 20 MiB/s", "20MiB", 20 << 20},
}

// chosenThrottles are the scaleOutThrottles RAFTKA_BENCH_SCALE_THROTTLES
// names (by metric, comma-separated), or all of them.
func chosenThrottles(b *testing.B) []scaleOutThrottle {
	names := os.Getenv("RAFTKA_BENCH_SCALE_THROTTLES")
	if names == "" {
		return scaleOutThrottles
	}
	var out []scaleOutThrottle
	for _, name := range strings.Split(names, ",") {
		i := slices.IndexFunc(scaleOutThrottles, func(t scaleOutThrottle) bool { return t.metric == name })
		if i < 0 {
			b.Fatalf("RAFTKA_BENCH_SCALE_THROTTLES: no throttle %q", name)
		}
		out = append(out, scaleOutThrottles[i])
	}
	return out
}

// setClusterThrottle sets follower.replication.throttled.rate for every
// broker at run time, as Kafka's tools do; 0 is no bound, and a negative
// rate removes the value, for the operator to choose one.
func setClusterThrottle(b *testing.B, cl *brokertest.Cluster, bytesPerSecond int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := strconv.FormatInt(bytesPerSecond, 10)
	alter := kadm.AlterConfig{Name: "follower.replication.throttled.rate", Value: &v}
	if bytesPerSecond < 0 {
		alter = kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.rate"}
	}
	resp, err := cl.Admin().AlterBrokerConfigs(ctx, []kadm.AlterConfig{alter})
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		b.Fatal(err)
	}
}

// awaitOperatorThrottle waits until the operator set its own replication
// throttle on the BrokerCluster "wide".
func awaitOperatorThrottle(b *testing.B, ns string) {
	for start := time.Now(); time.Since(start) < 2*time.Minute; time.Sleep(time.Second) {
		var c raftkav1.BrokerCluster
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "wide"}, &c); err == nil && c.Status.ReplicationThrottle != nil {
			return
		}
	}
	b.Fatal("the operator set no replication throttle within 2 minutes")
}

// awaitHandover waits until the operator handed the replication
// throttle of the BrokerCluster "wide" over to a value set by hand. A
// run after the automatic one would otherwise start while the operator
// still counts the rate as its own, and its next write could replace
// the rate this run measures.
func awaitHandover(b *testing.B, ns string) {
	for start := time.Now(); time.Since(start) < 2*time.Minute; time.Sleep(time.Second) {
		var c raftkav1.BrokerCluster
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "wide"}, &c); err == nil && c.Status.ReplicationThrottle == nil {
			return
		}
	}
	b.Fatal("the operator kept its replication throttle over one set by hand for 2 minutes")
}

// watchOperatorThrottle follows the operator's replication throttle until
// done closes, and returns a function that says which rates it chose.
func watchOperatorThrottle(b *testing.B, ns string, done <-chan struct{}) func() string {
	var mu sync.Mutex
	var rates []string
	go func() {
		for {
			var c raftkav1.BrokerCluster
			if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "wide"}, &c); err == nil && c.Status.ReplicationThrottle != nil {
				r := mibPerSecond(c.Status.ReplicationThrottle.BytesPerSecond) + " (" + c.Status.ReplicationThrottle.Reason + ")"
				mu.Lock()
				if len(rates) == 0 || rates[len(rates)-1] != r {
					rates = append(rates, r)
				}
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(rates) == 0 {
			return "none"
		}
		return strings.Join(rates, " → ")
	}
}
