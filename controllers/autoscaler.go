package controllers

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/autoscale"
)

var (
	lagGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "raftka_consumergroup_lag",
		Help: "Records a consumer group has yet to consume, per partition."}, []string{"namespace", "group", "topic", "partition"})
	desiredGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "raftka_consumergroup_desired_replicas",
		Help: "Consumers the autoscaler wants for a group."}, []string{"namespace", "group"})
	currentGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "raftka_consumergroup_current_replicas",
		Help: "Replicas of a group's scale target."}, []string{"namespace", "group"})
	stalledGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "raftka_consumergroup_stalled",
		Help: "1 while a group is Stalled: lag grows and its committed offsets do not move; else 0."}, []string{"namespace", "group"})
	growthsCounter = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftka_consumergroup_partition_growths_total",
		Help: "Topics the autoscaler grew for a group, by topic: one per CreatePartitions it made."}, []string{"namespace", "group", "topic"})
)

func init() {
	metrics.Registry.MustRegister(lagGauge, desiredGauge, currentGauge, stalledGauge, growthsCounter)
}

// groupMemory is what the controller keeps of each ConsumerGroup between
// syncs: the autoscaler's decision state, and the group id its gauges are
// labeled with, so that both go with the object (or with a changed group
// id). It is memory only: after an operator restart the stabilization
// windows start again, which delays scale-down rather than hastening it.
type groupMemory struct {
	mu sync.Mutex
	m  map[types.NamespacedName]groupEntry
}

type groupEntry struct {
	uid     types.UID
	groupID string
	state   autoscale.State
	// exported are the (topic, partition) lag gauges set last.
	exported map[[2]string]bool
}

// seen notes an object's group id; a new object under an old name, or a
// changed group id, starts afresh and drops the old gauges.
func (g *groupMemory) seen(cg *raftkav1.ConsumerGroup) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[types.NamespacedName]groupEntry{}
	}
	key := types.NamespacedName{Namespace: cg.Namespace, Name: cg.Name}
	e, ok := g.m[key]
	if ok && (e.uid != cg.UID || e.groupID != cg.Spec.GroupID) {
		forgetGroupMetrics(cg.Namespace, e.groupID)
		ok = false
	}
	if !ok {
		g.m[key] = groupEntry{uid: cg.UID, groupID: cg.Spec.GroupID}
	}
}

func (g *groupMemory) state(cg *raftkav1.ConsumerGroup) autoscale.State {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[types.NamespacedName{Namespace: cg.Namespace, Name: cg.Name}].state
}

func (g *groupMemory) putState(cg *raftkav1.ConsumerGroup, st autoscale.State) {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := types.NamespacedName{Namespace: cg.Namespace, Name: cg.Name}
	if e, ok := g.m[key]; ok {
		e.state = st
		g.m[key] = e
	}
}

// forget drops a deleted object's state and gauges.
func (g *groupMemory) forget(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e, ok := g.m[key]; ok {
		forgetGroupMetrics(key.Namespace, e.groupID)
		delete(g.m, key)
	}
}

func forgetGroupMetrics(ns, group string) {
	labels := prometheus.Labels{"namespace": ns, "group": group}
	lagGauge.DeletePartialMatch(labels)
	desiredGauge.DeletePartialMatch(labels)
	currentGauge.DeletePartialMatch(labels)
	stalledGauge.DeletePartialMatch(labels)
	growthsCounter.DeletePartialMatch(labels)
}

// policyOf applies the spec's defaults.
func policyOf(cg *raftkav1.ConsumerGroup, lagPeriod time.Duration) autoscale.Policy {
	p := autoscale.Policy{
		MinReplicas: ptr.Deref(cg.Spec.MinReplicas, 1), MaxReplicas: ptr.Deref(cg.Spec.MaxReplicas, 10),
		LagThreshold: ptr.Deref(cg.Spec.LagThreshold, 1000), ScaleDownWindow: 5 * time.Minute,
		StallAfter: max(2*time.Minute, 4*lagPeriod), ResetLatest: cg.Spec.OffsetReset == "latest",
		ActivationLag: ptr.Deref(cg.Spec.ActivationLagThreshold, 0), LimitToPartitionsWithLag: cg.Spec.LimitToPartitionsWithLag,
		ExcludePersistentLag: cg.Spec.ExcludePersistentLag,
	}
	if ps := cg.Spec.PartitionScaling; ps != nil && ps.Enabled {
		p.PartitionScaling = true
		p.MaxPartitions = ptr.Deref(ps.MaxPartitions, p.MaxReplicas)
	}
	if b := cg.Spec.Behavior; b != nil {
		if b.ScaleUpStabilizationSeconds != nil {
			p.ScaleUpWindow = time.Duration(*b.ScaleUpStabilizationSeconds) * time.Second
		}
		if b.ScaleDownStabilizationSeconds != nil {
			p.ScaleDownWindow = time.Duration(*b.ScaleDownStabilizationSeconds) * time.Second
		}
	}
	return p
}

// scaleTarget returns the target and its scale subresource, read as
// unstructured objects so that any kind with /scale works.
func (r *ConsumerGroupReconciler) scaleTarget(ctx context.Context, cg *raftkav1.ConsumerGroup) (*unstructured.Unstructured, *unstructured.Unstructured, error) {
	ref := cg.Spec.ScaleTargetRef
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind))
	target.SetNamespace(cg.Namespace)
	target.SetName(ref.Name)
	scale := &unstructured.Unstructured{}
	scale.SetGroupVersionKind(autoscalingv1.SchemeGroupVersion.WithKind("Scale"))
	if err := r.SubResource("scale").Get(ctx, target, scale); err != nil {
		return nil, nil, fmt.Errorf("scale of %s %s: %w", ref.Kind, ref.Name, err)
	}
	return target, scale, nil
}

func scaleReplicas(scale *unstructured.Unstructured) int32 {
	n, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas")
	return int32(n)
}

// ledPartitions counts, per topic, the partitions that have a leader.
func ledPartitions(ctx context.Context, adm *kadm.Client, topics []string) (map[string]int32, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, err
	}
	out := map[string]int32{}
	for _, t := range topics {
		d, ok := md.Topics[t]
		if !ok || d.Err != nil {
			return nil, fmt.Errorf("topic %s: %v", t, d.Err)
		}
		n := int32(0)
		for _, p := range d.Partitions {
			if p.Leader >= 0 && p.Err == nil {
				n++
			}
		}
		out[t] = n
	}
	return out, nil
}

// autoscale decides and acts: partitions first, then the target's replicas.
// It writes only /scale and the brokers' partition counts, never a spec.
func (r *ConsumerGroupReconciler) autoscale(ctx context.Context, cg *raftkav1.ConsumerGroup, adm *kadm.Client, lags []autoscale.PartitionLag, growing map[string]bool) error {
	target, scale, err := r.scaleTarget(ctx, cg)
	if err != nil {
		return err
	}
	led, err := ledPartitions(ctx, adm, cg.Spec.Topics)
	if err != nil {
		return err
	}
	current := scaleReplicas(scale)
	obs := autoscale.Observation{Now: time.Now(), Lags: lags, LedPartitions: led, CurrentReplicas: current, Growing: growing}
	d := autoscale.Decide(obs, policyOf(cg, r.SyncPeriod), r.groups.state(cg))
	r.groups.putState(cg, d.Next)
	logger := log.FromContext(ctx)

	for topic, n := range d.GrowPartitions {
		resp, err := adm.UpdatePartitions(ctx, int(n), topic)
		if err == nil {
			err = resp[topic].Err
		}
		if err != nil {
			return fmt.Errorf("grow %s to %d partitions: %w", topic, n, err)
		}
		logger.Info("partitions grown for consumers", "topic", topic, "partitions", n)
		growthsCounter.WithLabelValues(cg.Namespace, cg.Spec.GroupID, topic).Inc()
		r.event(cg, corev1.EventTypeNormal, "PartitionsGrown", "GrowPartitions", fmt.Sprintf("topic %s grown to %d partitions: %s", topic, n, d.Reason))
		cg.Status.LastScaleTime, cg.Status.LastScaleReason = ptr.To(metav1.Now()), d.Reason
	}
	if d.DesiredReplicas != current {
		from := current
		if err := unstructured.SetNestedField(scale.Object, int64(d.DesiredReplicas), "spec", "replicas"); err != nil {
			return err
		}
		if err := r.SubResource("scale").Update(ctx, target, client.WithSubResourceBody(scale)); err != nil {
			return fmt.Errorf("scale %s %s: %w", cg.Spec.ScaleTargetRef.Kind, cg.Spec.ScaleTargetRef.Name, err)
		}
		logger.Info("consumers scaled", "from", from, "to", d.DesiredReplicas, "lag", d.TotalLag)
		r.event(cg, corev1.EventTypeNormal, "Scaled", "Scale", fmt.Sprintf("%s %s scaled from %d to %d: %s", cg.Spec.ScaleTargetRef.Kind, cg.Spec.ScaleTargetRef.Name, from, d.DesiredReplicas, d.Reason))
		cg.Status.LastScaleTime, cg.Status.LastScaleReason = ptr.To(metav1.Now()), d.Reason
	}
	wasStalled := false
	for _, c := range cg.Status.Conditions {
		wasStalled = wasStalled || c.Type == raftkav1.ConditionStalled && c.Status == metav1.ConditionTrue
	}
	if d.Stalled && !wasStalled {
		r.event(cg, corev1.EventTypeWarning, "Stalled", "Scale", d.Reason)
	}
	if d.Stalled {
		setCondition(&cg.Status.Conditions, cg.Generation, raftkav1.ConditionStalled, true, "OffsetsNotMoving", d.Reason)
	} else {
		setCondition(&cg.Status.Conditions, cg.Generation, raftkav1.ConditionStalled, false, "OffsetsMoving", "committed offsets move or there is no lag")
	}
	cg.Status.CurrentReplicas, cg.Status.DesiredReplicas = scaleReplicas(scale), d.DesiredReplicas
	desiredGauge.WithLabelValues(cg.Namespace, cg.Spec.GroupID).Set(float64(d.DesiredReplicas))
	currentGauge.WithLabelValues(cg.Namespace, cg.Spec.GroupID).Set(float64(scaleReplicas(scale)))
	stalled := 0.0
	if d.Stalled {
		stalled = 1
	}
	stalledGauge.WithLabelValues(cg.Namespace, cg.Spec.GroupID).Set(stalled)
	return nil
}

// event records what the autoscaler did (action) and why, on the
// ConsumerGroup.
func (r *ConsumerGroupReconciler) event(cg *raftkav1.ConsumerGroup, typ, reason, action, msg string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(cg, nil, typ, reason, action, "%s", msg)
	}
}

// exportLag sets a group's lag gauges, and drops those of partitions it
// no longer reads.
func (g *groupMemory) exportLag(cg *raftkav1.ConsumerGroup, lags []autoscale.PartitionLag, p autoscale.Policy) {
	ns, group := cg.Namespace, cg.Spec.GroupID
	now := map[[2]string]bool{}
	for _, l := range lags {
		part := strconv.Itoa(int(l.Partition))
		lagGauge.WithLabelValues(ns, group, l.Topic, part).Set(float64(p.Lag(l)))
		now[[2]string{l.Topic, part}] = true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	key := types.NamespacedName{Namespace: cg.Namespace, Name: cg.Name}
	e, ok := g.m[key]
	if !ok {
		return
	}
	for tp := range e.exported {
		if !now[tp] {
			lagGauge.DeleteLabelValues(ns, group, tp[0], tp[1])
		}
	}
	e.exported = now
	g.m[key] = e
}
