package controllers

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

// keyedChecker holds what a keyed run acknowledged and processed: a
// record processed after a later record of its key is reordered; one
// processed again (after a rebalance) is not.
type keyedChecker struct {
	mu        sync.Mutex
	acked     map[string]int // key -> records acknowledged (seqs 0..n-1)
	processed map[string]map[int]bool
	latest    map[string]int
	reordered int
	firstBad  string
	grown     int // records processed from partitions the autoscaler added
}

func (k *keyedChecker) process(key string, seq int, partition int32, from int32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.processed[key] == nil {
		k.processed[key] = map[int]bool{}
	}
	if partition >= from {
		k.grown++
	}
	if last, ok := k.latest[key]; ok && seq < last && !k.processed[key][seq] {
		k.reordered++
		if k.firstBad == "" {
			k.firstBad = fmt.Sprintf("key %s: %d processed after %d", key, seq, last)
		}
	}
	k.processed[key][seq] = true
	if last, ok := k.latest[key]; !ok || seq > last {
		k.latest[key] = seq
	}
}

// missing counts acknowledged records not processed.
func (k *keyedChecker) missing() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for key, acked := range k.acked {
		for seq := range acked {
			if !k.processed[key][seq] {
				n++
			}
		}
	}
	return n
}

// produceKeyed writes n records over 64 keys, each key's sequence in its
// value, with franz-go's default partitioner, at rate per second.
func (k *keyedChecker) produceKeyed(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, n, rate int) {
	k.mu.Lock()
	next := map[string]int{}
	for key, acked := range k.acked {
		next[key] = acked
	}
	k.mu.Unlock()
	for i := range n {
		key := "key-" + strconv.Itoa(i%64)
		seq := next[key]
		next[key]++
		r := &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(strconv.Itoa(seq))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %s %d: %v", key, seq, err)
		}
		k.mu.Lock()
		k.acked[key] = seq + 1
		k.mu.Unlock()
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
	labels := map[string]string{"app": "keyed-workers"}
	mustCreate(t, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "keyed-workers", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "consumer", Image: "consumer:test"}}}}},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	check := &keyedChecker{acked: map[string]int{}, processed: map[string]map[int]bool{}, latest: map[string]int{}}
	pool := &consumerPool{t: t, ns: ns, name: "keyed-workers", group: "keyed", topic: "keyed", seen: map[string]int{},
		process: func(r *kgo.Record) {
			seq, _ := strconv.Atoi(string(r.Value))
			check.process(string(r.Key), seq, r.Partition, 2)
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
	producer := brokers.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MetadataMaxAge(2*time.Second), kgo.MetadataMinAge(250*time.Millisecond))
	check.produceKeyed(ctx, t, producer, "keyed", 2000, 200)
	eventually2(t, 120*time.Second, "partitions and consumers to grow", func() (bool, string) {
		return freshPartitionCount("keyed") > 2 && replicas() > 1, fmt.Sprintf("partitions %d, replicas %d", freshPartitionCount("keyed"), replicas())
	})
	eventually2(t, 180*time.Second, "every acknowledged record to be processed", func() (bool, string) {
		n := check.missing()
		return n == 0, fmt.Sprintf("%d unprocessed", n)
	})
	eventually2(t, 90*time.Second, "the consumers to scale to zero", func() (bool, string) {
		return replicas() == 0, fmt.Sprintf("replicas %d", replicas())
	})

	// Lag past the activation threshold wakes the consumers again.
	check.produceKeyed(ctx, t, producer, "keyed", 200, 200)
	eventually2(t, 60*time.Second, "the consumers to wake", func() (bool, string) {
		return replicas() >= 1, fmt.Sprintf("replicas %d", replicas())
	})
	eventually2(t, 120*time.Second, "the records after the wake to be processed", func() (bool, string) {
		n := check.missing()
		return n == 0, fmt.Sprintf("%d unprocessed", n)
	})
	cancel()
	<-poolDone
	check.mu.Lock()
	defer check.mu.Unlock()
	t.Logf("keyed autoscaling: %d partitions, at most %d consumers, %d records from grown partitions, %d reordered",
		freshPartitionCount("keyed"), pool.maxSeen, check.grown, check.reordered)
	if check.reordered > 0 {
		t.Errorf("%d records processed after a later record of their key (first: %s)", check.reordered, check.firstBad)
	}
	if check.grown == 0 {
		t.Error("no record was processed from a partition the autoscaler added")
	}
}
