//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/broker/brokertest"
)

// testAutoscaling: a keyed pipeline whose consumers are slower than its
// producer builds lag; the operator grows the topic's partitions and the
// consumer Deployment, and real pods join the group and drain the lag. Each
// key's records are processed in order across the growths (ordered growth,
// on by default) and none is skipped: the pods forward what they process to
// a one-partition output topic before committing, so its order is the
// processing order. Once drained the Deployment scales to zero
// (minReplicas 0), and lag past activationLagThreshold wakes it.
func testAutoscaling(t *testing.T, e *env) {
	const topic, output, group, deployment = "orders", "orders-processed", "order-processors", "order-processor"
	e.createTopic(t, topic, 2)
	e.createTopic(t, output, 1)
	if err := e.kube.Create(ctx(t), consumerDeployment(e.bootstrap(t), deployment, group, topic, output)); err != nil {
		t.Fatal(err)
	}
	cg := &raftkav1.ConsumerGroup{
		ObjectMeta: metav1.ObjectMeta{Name: group, Namespace: namespace},
		Spec: raftkav1.ConsumerGroupSpec{
			ClusterRef:             raftkav1.ClusterReference{Name: clusterName},
			GroupID:                group,
			Topics:                 []string{topic},
			ScaleTargetRef:         &raftkav1.ScaleTargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: deployment},
			MinReplicas:            ptr.To[int32](0),
			MaxReplicas:            ptr.To[int32](4),
			LagThreshold:           ptr.To[int64](100),
			ActivationLagThreshold: ptr.To[int64](10),
			PartitionScaling:       &raftkav1.PartitionScaling{Enabled: true, MaxPartitions: ptr.To[int32](4)},
			Behavior:               &raftkav1.ScalingBehavior{ScaleDownStabilizationSeconds: ptr.To[int32](20)},
		},
	}
	if err := e.kube.Create(ctx(t), cg); err != nil {
		t.Fatal(err)
	}
	admin := kadm.NewClient(e.kafka(t, e.bootstrap(t)))
	obs := observeScaling(t, e, admin, topic, deployment)

	// 100 records/s over 64 keys against one consumer at 25/s: lag grows by
	// about 75/s. The producer learns of new partitions within 2 s, so keys
	// move while older records of theirs wait in the old partitions.
	producer := e.kafka(t, e.bootstrap(t), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic), kgo.MetadataMaxAge(2*time.Second))
	check := brokertest.NewKeyOrder(2)
	keys := &keyedProducer{check: check, next: map[string]int{}}
	stopProducing := keys.produceEvery(t, producer, 10*time.Millisecond)
	eventually(t, 3*time.Minute, "partitions and ready consumer pods to grow to at least 3", func() (bool, string) {
		partitions, ready := obs.max()
		return partitions >= 3 && ready >= 3, fmt.Sprintf("max partitions %d, max ready consumers %d, %s", partitions, ready, e.groupState(t, group))
	})
	produced := stopProducing()
	partitions, ready := obs.max()
	t.Logf("grown: max partitions %d, max ready consumer pods %d; %d records produced", partitions, ready, produced)
	e.waitLagDrained(t, admin, group)

	drained := time.Now()
	eventually(t, 2*time.Minute, "the Deployment to scale to zero", func() (bool, string) {
		spec, ready := deploymentReplicas(t, e, namespace, deployment)
		return spec == 0 && ready == 0, fmt.Sprintf("spec %d ready %d; %s", spec, ready, e.groupState(t, group))
	})
	t.Logf("scaled to zero %s after the lag drained", time.Since(drained).Round(time.Second))
	keys.produceN(t, producer, 200)
	eventually(t, 2*time.Minute, "lag past activationLagThreshold to wake the Deployment", func() (bool, string) {
		spec, ready := deploymentReplicas(t, e, namespace, deployment)
		return spec >= 1 && ready >= 1, fmt.Sprintf("spec %d ready %d; %s", spec, ready, e.groupState(t, group))
	})
	e.waitLagDrained(t, admin, group)
	obs.stop(t)
	eventually(t, time.Minute, "the ConsumerGroup's status to report no lag", func() (bool, string) {
		if err := e.kube.Get(ctx(t), client.ObjectKeyFromObject(cg), cg); err != nil {
			return false, err.Error()
		}
		return cg.Status.TotalLag == 0, e.groupState(t, group)
	})
	checkOutput(t, e.kafka(t, e.bootstrap(t), kgo.ConsumeTopics(output), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), check)
}

// consumerDeployment is the example consumer as a pipeline stage: 25
// records/s, forwarding to output.
func consumerDeployment(bootstrap, name, group, topic, output string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](10),
					Containers: []corev1.Container{{
						Name: "consumer", Image: consumerImage, ImagePullPolicy: corev1.PullIfNotPresent,
						Env: []corev1.EnvVar{
							{Name: "BOOTSTRAP_SERVERS", Value: bootstrap},
							{Name: "GROUP_ID", Value: group},
							{Name: "TOPIC", Value: topic},
							{Name: "OUTPUT_TOPIC", Value: output},
							{Name: "RECORDS_PER_SECOND", Value: "25"},
						},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
					}},
				},
			},
		},
	}
}

func (e *env) waitLagDrained(t *testing.T, admin *kadm.Client, group string) {
	t.Helper()
	eventually(t, 3*time.Minute, "the lag to drain", func() (bool, string) {
		lag, err := admin.Lag(ctx(t), group)
		if err != nil {
			return false, err.Error()
		}
		l := lag[group]
		total := l.Lag.Total()
		return total == 0 && l.Error() == nil, fmt.Sprintf("lag %d; %s", total, e.groupState(t, group))
	})
}

// scalingObserver watches a topic's partitions on the brokers and the
// Deployment: the consumers may never outnumber the partitions they share.
type scalingObserver struct {
	mu                      sync.Mutex
	maxPartitions, maxReady int32
	violations              []string
	done, stopped           chan struct{}
}

func observeScaling(t *testing.T, e *env, admin *kadm.Client, topic, deployment string) *scalingObserver {
	o := &scalingObserver{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(o.stopped)
		for {
			select {
			case <-o.done:
				return
			case <-time.After(500 * time.Millisecond):
			}
			// The Deployment first: replicas read before partitions can only
			// be older, so a violation seen here is real.
			var d appsv1.Deployment
			if e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: deployment}, &d) != nil {
				continue
			}
			details, err := admin.ListTopics(ctx(t), topic)
			if err != nil || details[topic].Err != nil {
				continue
			}
			partitions := int32(len(details[topic].Partitions))
			o.mu.Lock()
			o.maxPartitions = max(o.maxPartitions, partitions)
			o.maxReady = max(o.maxReady, d.Status.ReadyReplicas)
			if d.Spec.Replicas != nil && *d.Spec.Replicas > partitions {
				o.violations = append(o.violations, fmt.Sprintf("%d replicas for %d partitions", *d.Spec.Replicas, partitions))
			}
			o.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		select {
		case <-o.done:
		default:
			close(o.done)
		}
		<-o.stopped
	})
	return o
}

func (o *scalingObserver) max() (partitions, ready int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.maxPartitions, o.maxReady
}

// stop ends the watch and fails the test if it saw more consumers than
// partitions.
func (o *scalingObserver) stop(t *testing.T) {
	t.Helper()
	close(o.done)
	<-o.stopped
	if len(o.violations) > 0 {
		t.Fatalf("more consumers than partitions: %v", o.violations)
	}
}

// keyedProducer produces records over 64 keys, each key's sequence
// number in the value, and reports each one acknowledged to check.
type keyedProducer struct {
	check *brokertest.KeyOrder
	mu    sync.Mutex
	n     int
	next  map[string]int
	err   error
}

func (k *keyedProducer) produce(cl *kgo.Client) {
	key := "customer-" + strconv.Itoa(k.n%64)
	k.n++
	seq := k.next[key]
	k.next[key]++
	cl.Produce(context.Background(), &kgo.Record{Key: []byte(key), Value: []byte(strconv.Itoa(seq))}, func(_ *kgo.Record, err error) {
		if err != nil {
			k.mu.Lock()
			k.err = err
			k.mu.Unlock()
			return
		}
		k.check.Ack(key, seq)
	})
}

// produceEvery produces one record per interval until the returned
// function is called; it flushes and returns how many were acknowledged.
func (k *keyedProducer) produceEvery(t *testing.T, cl *kgo.Client, interval time.Duration) func() int {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				k.produce(cl)
			}
		}
	}()
	return func() int {
		close(stop)
		<-done
		return k.flush(t, cl)
	}
}

func (k *keyedProducer) produceN(t *testing.T, cl *kgo.Client, n int) {
	for range n {
		k.produce(cl)
	}
	k.flush(t, cl)
}

func (k *keyedProducer) flush(t *testing.T, cl *kgo.Client) int {
	t.Helper()
	if err := cl.Flush(ctx(t)); err != nil {
		t.Fatal(err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		t.Fatalf("produce: %v", k.err)
	}
	return k.check.Report().Acked
}

// checkOutput reads the pipeline's output, which is in processing order
// (each record's source partition in its header), into check, until every
// acknowledged record is there or two minutes passed; then no record may
// follow a later one of its key, and some must come from partitions the
// autoscaler added.
func checkOutput(t *testing.T, cl *kgo.Client, check *brokertest.KeyOrder) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); check.Missing() > 0 && time.Now().Before(deadline); {
		cl.PollFetches(ctx(t)).EachRecord(func(r *kgo.Record) {
			seq, _ := strconv.Atoi(string(r.Value))
			partition := -1
			for _, h := range r.Headers {
				if h.Key == "partition" {
					partition, _ = strconv.Atoi(string(h.Value))
				}
			}
			check.Process(string(r.Key), seq, int32(partition))
		})
	}
	r := check.Report()
	t.Logf("pipeline output: %d of %d acknowledged records processed, %d from grown partitions, %d reordered", r.Acked-r.Missing, r.Acked, r.Grown, r.Reordered)
	if r.Missing > 0 {
		t.Errorf("%d acknowledged records never processed", r.Missing)
	}
	if r.Reordered > 0 {
		t.Errorf("%d records processed after a later record of their key (first: %s)", r.Reordered, r.FirstBad)
	}
	if r.Grown == 0 {
		t.Error("no record was processed from a partition the autoscaler added")
	}
}
