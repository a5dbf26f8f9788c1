package controllers

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/broker/brokertest"
)

// keyedProducer writes records over 64 keys, each key's sequence in its
// value, with franz-go's default partitioner, and reports each one
// acknowledged to check.
type keyedProducer struct {
	cl    *kgo.Client
	check *brokertest.KeyOrder
	n     int
	next  map[string]int
}

// produce writes n records at rate per second, each acknowledged before
// the next.
func (p *keyedProducer) produce(ctx context.Context, t *testing.T, topic string, n, rate int) {
	for range n {
		key := "key-" + strconv.Itoa(p.n%64)
		p.n++
		seq := p.next[key]
		p.next[key]++
		r := &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(strconv.Itoa(seq))}
		if err := p.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %s %d: %v", key, seq, err)
		}
		p.check.Ack(key, seq)
		time.Sleep(time.Second / time.Duration(rate))
	}
}

// TestAutoscalerKeepsEachKeysOrderAndScalesToZero: the autoscaler grows a
// keyed topic's partitions and its consumers while lag builds, with
// ordered growth on (the default); no key is processed out of order and
// nothing acknowledged is skipped. Once the lag is gone the consumers
// scale to zero (minReplicas 0), and lag above activationLagThreshold
// wakes them again.
func TestAutoscalerKeepsEachKeysOrderAndScalesToZero(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, brokerCluster(ns))
	topic := topicObject(ns, "keyed", 2)
	topic.Spec.MinInSyncReplicas = nil
	mustCreate(t, topic)
	readyIs(t, ns, "keyed", metav1.ConditionTrue, raftkav1.ReasonCreated)
	mustCreate(t, workerDeployment(ns, "keyed-workers"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	check := brokertest.NewKeyOrder(2)
	pool := &consumerPool{t: t, ns: ns, name: "keyed-workers", group: "keyed", topic: "keyed", seen: map[string]int{},
		process: func(r *kgo.Record) {
			seq, _ := strconv.Atoi(string(r.Value))
			check.Process(string(r.Key), seq, r.Partition)
			time.Sleep(20 * time.Millisecond)
		}}
	poolDone := make(chan struct{})
	go func() { pool.run(ctx); close(poolDone) }()
	mustCreate(t, &raftkav1.ConsumerGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "keyed", Namespace: ns},
		Spec: raftkav1.ConsumerGroupSpec{ClusterRef: raftkav1.ClusterReference{Name: "events"}, GroupID: "keyed", Topics: []string{"keyed"},
			ScaleTargetRef: &raftkav1.ScaleTargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "keyed-workers"},
			MinReplicas:    ptr.To[int32](0), MaxReplicas: ptr.To[int32](4), LagThreshold: ptr.To[int64](100),
			ActivationLagThreshold: ptr.To[int64](10),
			PartitionScaling:       &raftkav1.PartitionScaling{Enabled: true, MaxPartitions: ptr.To[int32](4)},
			Behavior:               &raftkav1.ScalingBehavior{ScaleDownStabilizationSeconds: ptr.To[int32](10)}},
	})
	replicas := func() int32 {
		var d appsv1.Deployment
		_ = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "keyed-workers"}, &d)
		return ptr.Deref(d.Spec.Replicas, -1)
	}

	// A producer that outruns one consumer (50 records/s): 200 records/s
	// for 10 s, learning of new partitions within 2 s.
	producer := &keyedProducer{cl: brokers.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MetadataMaxAge(2*time.Second), kgo.MetadataMinAge(250*time.Millisecond)),
		check: check, next: map[string]int{}}
	producer.produce(ctx, t, "keyed", 2000, 200)
	eventually2(t, 120*time.Second, "partitions and consumers to grow", func() (bool, string) {
		return freshPartitionCount("keyed") > 2 && replicas() > 1, fmt.Sprintf("partitions %d, replicas %d", freshPartitionCount("keyed"), replicas())
	})
	eventually2(t, 180*time.Second, "every acknowledged record to be processed", func() (bool, string) {
		n := check.Missing()
		return n == 0, fmt.Sprintf("%d unprocessed", n)
	})
	eventually2(t, 90*time.Second, "the consumers to scale to zero", func() (bool, string) {
		return replicas() == 0, fmt.Sprintf("replicas %d", replicas())
	})

	// Lag past the activation threshold wakes the consumers again.
	producer.produce(ctx, t, "keyed", 200, 200)
	eventually2(t, 60*time.Second, "the consumers to wake", func() (bool, string) {
		return replicas() >= 1, fmt.Sprintf("replicas %d", replicas())
	})
	eventually2(t, 120*time.Second, "the records after the wake to be processed", func() (bool, string) {
		n := check.Missing()
		return n == 0, fmt.Sprintf("%d unprocessed", n)
	})
	cancel()
	<-poolDone
	r := check.Report()
	t.Logf("keyed autoscaling: %d partitions, at most %d consumers, %d records from grown partitions, %d reordered",
		freshPartitionCount("keyed"), pool.maxSeen, r.Grown, r.Reordered)
	if r.Reordered > 0 {
		t.Errorf("%d records processed after a later record of their key (first: %s)", r.Reordered, r.FirstBad)
	}
	if r.Grown == 0 {
		t.Error("no record was processed from a partition the autoscaler added")
	}
}
