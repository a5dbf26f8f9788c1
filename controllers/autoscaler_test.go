package controllers

import (
	"cmp"
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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

// consumerPool plays the Deployment's pods: envtest runs none, so it keeps
// as many real franz-go group consumers running as spec.replicas says.
type consumerPool struct {
	t        *testing.T
	ns, name string
	// group and topic are "workers" and "work" if empty.
	group, topic string
	// process handles one record; if nil, the pool counts each value in
	// seen, taking 50 ms a record.
	process func(r *kgo.Record)
	mu      sync.Mutex
	seen    map[string]int
	stops   []func()
	maxSeen int
}

func (p *consumerPool) run(ctx context.Context) {
	for ctx.Err() == nil {
		var d appsv1.Deployment
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: p.ns, Name: p.name}, &d); err == nil {
			want := int(ptr.Deref(d.Spec.Replicas, 0))
			for len(p.stops) < want {
				p.stops = append(p.stops, p.start(ctx))
			}
			for len(p.stops) > want {
				p.stops[len(p.stops)-1]()
				p.stops = p.stops[:len(p.stops)-1]
			}
			p.maxSeen = max(p.maxSeen, len(p.stops))
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, stop := range p.stops {
		stop()
	}
}

// start runs one slow consumer: 20 records a second, committing as it goes.
func (p *consumerPool) start(parent context.Context) func() {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	group, topic := cmp.Or(p.group, "workers"), cmp.Or(p.topic, "work")
	cl := brokers.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.MetadataMinAge(time.Second), kgo.MetadataMaxAge(2*time.Second), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 10)
			for _, r := range fs.Records() {
				if p.process != nil {
					p.process(r)
					continue
				}
				time.Sleep(50 * time.Millisecond)
				p.mu.Lock()
				p.seen[string(r.Value)]++
				p.mu.Unlock()
			}
			_ = cl.CommitUncommittedOffsets(context.Background())
		}
	}()
	return func() {
		cancel()
		<-done
		_ = cl.CommitUncommittedOffsets(context.Background())
		cl.LeaveGroup()
	}
}

// workerDeployment is a consumer Deployment of one replica whose pods a
// consumerPool plays: envtest runs no kubelet.
func workerDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "consumer", Image: "consumer:test"}}}}},
	}
}

func TestAutoscalerGrowsPartitionsThenConsumersAndDrainsLag(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, brokerCluster(ns))
	topic := topicObject(ns, "work", 2)
	topic.Spec.MinInSyncReplicas = nil
	mustCreate(t, topic)
	readyIs(t, ns, "work", metav1.ConditionTrue, raftkav1.ReasonCreated)
	mustCreate(t, workerDeployment(ns, "workers"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool := &consumerPool{t: t, ns: ns, name: "workers", seen: map[string]int{}}
	poolDone := make(chan struct{})
	go func() { pool.run(ctx); close(poolDone) }()

	mustCreate(t, &raftkav1.ConsumerGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: ns},
		Spec: raftkav1.ConsumerGroupSpec{ClusterRef: raftkav1.ClusterReference{Name: "events"}, GroupID: "workers", Topics: []string{"work"},
			ScaleTargetRef: &raftkav1.ScaleTargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "workers"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: ptr.To[int32](4), LagThreshold: ptr.To[int64](100),
			PartitionScaling: &raftkav1.PartitionScaling{Enabled: true, MaxPartitions: ptr.To[int32](4)},
			Behavior:         &raftkav1.ScalingBehavior{ScaleDownStabilizationSeconds: ptr.To[int32](10)}},
	})

	// A producer that outruns the consumers: 200 records/s for 8 s.
	producer := brokers.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("work"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	const total = 1600
	var order []string // "p<partitions>" and "r<replicas>" as they change
	var orderMu sync.Mutex
	var lastHigh, downAt time.Time // last lag above one consumer's share; first return to 1 consumer
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		lastP, lastR := 0, 0
		for ctx.Err() == nil {
			p := freshPartitionCount("work")
			var d appsv1.Deployment
			_ = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "workers"}, &d)
			r := int(ptr.Deref(d.Spec.Replicas, 0))
			var cg raftkav1.ConsumerGroup
			_ = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "workers"}, &cg)
			orderMu.Lock()
			if cg.Status.TotalLag > 100 {
				lastHigh = time.Now()
			}
			if r == 1 && lastR > 1 && downAt.IsZero() {
				downAt = time.Now()
			}
			if p != lastP {
				order = append(order, "p"+strconv.Itoa(p))
			}
			if r != lastR {
				order = append(order, "r"+strconv.Itoa(r))
				if r > p {
					t.Errorf("replicas %d exceed partitions %d", r, p)
				}
			}
			orderMu.Unlock()
			lastP, lastR = p, r
			time.Sleep(100 * time.Millisecond)
		}
	}()
	for i := 0; i < total; i++ {
		producer.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}, nil)
		time.Sleep(5 * time.Millisecond)
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	eventually2(t, 90*time.Second, "partitions and consumers to reach 4", func() (bool, string) {
		var d appsv1.Deployment
		_ = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "workers"}, &d)
		var cg raftkav1.ConsumerGroup
		_ = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "workers"}, &cg)
		return freshPartitionCount("work") == 4 && ptr.Deref(d.Spec.Replicas, 0) == 4,
			fmt.Sprintf("replicas %d status %+v", ptr.Deref(d.Spec.Replicas, 0), cg.Status)
	})
	eventually2(t, 120*time.Second, "the lag to drain", func() (bool, string) {
		var cg raftkav1.ConsumerGroup
		_ = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "workers"}, &cg)
		return cg.Status.TotalLag == 0 && cg.Status.Topics != nil, fmt.Sprintf("lag %d", cg.Status.TotalLag)
	})
	eventually2(t, 60*time.Second, "scale-down to 1", func() (bool, string) {
		orderMu.Lock()
		defer orderMu.Unlock()
		return !downAt.IsZero(), ""
	})
	cancel()
	<-poolDone
	<-watchDone
	orderMu.Lock()
	defer orderMu.Unlock()
	t.Logf("changes in order: %v", order)
	// One sync period of slack on each side of the 10 s window.
	if waited := downAt.Sub(lastHigh); waited < 8*time.Second {
		t.Fatalf("scaled down to 1 consumer %v after the lag last needed more, before the 10 s window", waited)
	}
	// The partitions grew before the consumers passed the old partition count.
	firstGrow, firstR3 := -1, -1
	for i, o := range order {
		if o == "p3" || o == "p4" {
			if firstGrow < 0 {
				firstGrow = i
			}
		}
		if (o == "r3" || o == "r4") && firstR3 < 0 {
			firstR3 = i
		}
	}
	if firstGrow < 0 || firstR3 < 0 || firstGrow > firstR3 {
		t.Fatalf("partitions did not grow before replicas passed 2: %v", order)
	}
	pool.mu.Lock()
	defer pool.mu.Unlock()
	for i := 0; i < total; i++ {
		if pool.seen[fmt.Sprint(i)] == 0 {
			t.Fatalf("record %d was never consumed", i)
		}
	}
	var cg raftkav1.ConsumerGroup
	_ = k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "workers"}, &cg)
	if cg.Status.LastScaleTime == nil || cg.Status.LastScaleReason == "" {
		t.Fatalf("no last scale in status: %+v", cg.Status)
	}
	// Each action was an Event, and the numbers are on the metrics endpoint.
	var events corev1.EventList
	if err := k8s.List(context.Background(), &events, clientInNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == "workers" {
			reasons[e.Reason]++
		}
	}
	if reasons["Scaled"] < 2 || reasons["PartitionsGrown"] < 1 {
		t.Fatalf("events by reason: %v", reasons)
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() == ns {
					exported[f.GetName()] = true
				}
			}
		}
	}
	for _, name := range []string{"raftka_consumergroup_lag", "raftka_consumergroup_desired_replicas", "raftka_consumergroup_current_replicas"} {
		if !exported[name] {
			t.Errorf("metric %s not exported for the group", name)
		}
	}
	// The autoscaler wrote /scale and the brokers, not the Topic's spec.
	eventually(t, "the Topic to show the grown partitions and stay Ready", func() (bool, string) {
		got := getTopic(t, ns, "work")
		return got.Spec.Partitions == 2 && got.Status.Partitions == 4 && meta.IsStatusConditionTrue(got.Status.Conditions, raftkav1.ConditionReady),
			fmt.Sprintf("spec %d status %d", got.Spec.Partitions, got.Status.Partitions)
	})
}

// eventually2 is eventually with its own timeout.
func eventually2(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, s := cond()
		if ok {
			return
		}
		last = s
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (%s)", what, last)
}

// freshPartitionCount asks the brokers through a new client each time:
// franz-go clients cache metadata.
func freshPartitionCount(topic string) int {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers.AllAddrs()...))
	if err != nil {
		return 0
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(context.Background(), topic)
	if err != nil || details[topic].Err != nil {
		return 0
	}
	return len(details[topic].Partitions)
}
