package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/autoscale"
	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/lag"
	"github.com/raftka/raftka/internal/tenancy"
)

// ConsumerGroupReconciler reports a consumer group's lag.
type ConsumerGroupReconciler struct {
	client.Client
	Brokers *brokerclient.Clients
	// Secrets keeps the Secrets the brokers are reached with; shared by
	// the controllers (Setup).
	Secrets  *SecretCache
	Recorder events.EventRecorder
	// SyncPeriod is how often lag is measured.
	SyncPeriod time.Duration
	// HTTPAddr is where the operator reaches a broker's HTTP endpoint,
	// which reports ordered growths; DNSHTTPAddr when nil.
	HTTPAddr func(cluster *raftkav1.BrokerCluster, id int32) string
	groups   groupMemory
}

// +kubebuilder:rbac:groups=raftka.io,resources=consumergroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=raftka.io,resources=consumergroups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=*,resources=*/scale,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile measures one group's lag into its status.
func (r *ConsumerGroupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cg raftkav1.ConsumerGroup
	if err := r.Get(ctx, req.NamespacedName, &cg); err != nil {
		if apierrors.IsNotFound(err) {
			r.groups.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.groups.seen(&cg)
	before := cg.DeepCopy()
	err := r.measure(ctx, &cg)
	switch {
	case errors.As(err, new(errNotAdmitted)):
		setCondition(&cg.Status.Conditions, cg.Generation, raftkav1.ConditionReady, false, raftkav1.ReasonNotAdmitted, err.Error())
	case err != nil:
		setCondition(&cg.Status.Conditions, cg.Generation, raftkav1.ConditionReady, false, "LagUnknown", err.Error())
	default:
		setCondition(&cg.Status.Conditions, cg.Generation, raftkav1.ConditionReady, true, "LagMeasured",
			fmt.Sprintf("lag %d over %d topics", cg.Status.TotalLag, len(cg.Status.Topics)))
	}
	cg.Status.ObservedGeneration = cg.Generation
	if uerr := patchStatus(ctx, r.Client, &cg, before, cg.Status, before.Status); uerr != nil {
		return ctrl.Result{}, uerr
	}
	// Lag changes without any Kubernetes event: poll, and retry failures
	// on the same period rather than faster, as the brokers may be down.
	return ctrl.Result{RequeueAfter: r.SyncPeriod}, nil
}

// measure reads committed and end offsets and the group's state.
func (r *ConsumerGroupReconciler) measure(ctx context.Context, cg *raftkav1.ConsumerGroup) error {
	cluster, err := tenantCluster(ctx, r.Client, cg.Namespace, cg.Spec.ClusterRef)
	if err != nil {
		return err
	}
	// A tenant measures and scales its own groups over its own topics.
	if err := tenancy.CheckGroup(cluster, cg.Namespace, cg.Spec.GroupID, cg.Spec.Topics); err != nil {
		return errNotAdmitted{err}
	}
	access, err := clusterAccess(ctx, r.Client, r.Brokers, r.Secrets, cluster)
	if err != nil {
		return err
	}
	cl, err := r.Brokers.Kafka(access)
	if err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	lags, err := ReadLag(ctx, cl, cg.Spec.GroupID, cg.Spec.Topics)
	if err != nil {
		return err
	}
	cg.Status.Topics, cg.Status.TotalLag, cg.Status.Partitions = SummarizeLag(lags, policyOf(cg, r.SyncPeriod))
	r.groups.exportLag(cg, lags, policyOf(cg, r.SyncPeriod))
	groups, err := adm.DescribeGroups(ctx, cg.Spec.GroupID)
	if err == nil {
		g := groups[cg.Spec.GroupID]
		cg.Status.State, cg.Status.Members = g.State, int32(len(g.Members))
	}
	if cg.Spec.ScaleTargetRef == nil {
		return nil
	}
	return r.autoscale(ctx, cg, adm, lags, r.growing(ctx, cluster, cg.Spec.Topics))
}

// growing names the topics whose ordered growth is in progress. Brokers
// that cannot be asked name none: growing a topic during a hold only
// stacks another hold behind it.
func (r *ConsumerGroupReconciler) growing(ctx context.Context, cluster *raftkav1.BrokerCluster, topics []string) map[string]bool {
	all, err := askGrowths(ctx, r.HTTPAddr, cluster, "")
	if err != nil {
		log.FromContext(ctx).Info("ordered growths not read", "error", err.Error())
		return nil
	}
	out := map[string]bool{}
	for _, st := range all {
		if len(st.Growths) > 0 && slices.Contains(topics, st.Topic) {
			out[st.Topic] = true
		}
	}
	return out
}

// ReadLag reads, for every partition of the topics, the group's committed
// offset, the log's start and end offsets, and the offsets between the
// group's position and the end that hold no record to consume.
func ReadLag(ctx context.Context, cl *kgo.Client, group string, topics []string) ([]autoscale.PartitionLag, error) {
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	if err := ends.Error(); err != nil {
		return nil, err
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	committed, err := adm.FetchOffsetsForTopics(ctx, group, topics...)
	if err != nil {
		return nil, err
	}
	var out []autoscale.PartitionLag
	var spans []lag.Span
	ends.Each(func(e kadm.ListedOffset) {
		l := autoscale.PartitionLag{Topic: e.Topic, Partition: e.Partition, End: e.Offset, Committed: -1}
		if s, ok := starts.Lookup(e.Topic, e.Partition); ok {
			l.Start = s.Offset
		}
		from := l.Start
		if c, ok := committed.Lookup(e.Topic, e.Partition); ok && c.Err == nil && c.At >= 0 {
			l.Committed, from = c.At, c.At
		}
		spans = append(spans, lag.Span{Topic: l.Topic, Partition: l.Partition, From: from, End: l.End})
		out = append(out, l)
	})
	skipped := lag.Skipped(ctx, cl, spans)
	for i := range out {
		out[i].Skipped = skipped[out[i].Topic][out[i].Partition]
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

// SummarizeLag turns observations into status, counting a partition
// without a commit by the policy's offset reset.
func SummarizeLag(lags []autoscale.PartitionLag, p autoscale.Policy) (topics []raftkav1.TopicLag, total int64, minPartitions int32) {
	byTopic := map[string]*raftkav1.TopicLag{}
	var order []string
	for _, l := range lags {
		t := byTopic[l.Topic]
		if t == nil {
			t = &raftkav1.TopicLag{Topic: l.Topic}
			byTopic[l.Topic] = t
			order = append(order, l.Topic)
		}
		lag := p.Lag(l)
		t.Lag += lag
		total += lag
		t.Partitions = append(t.Partitions, raftkav1.PartitionLag{Partition: l.Partition, Committed: l.Committed, End: l.End, Lag: lag})
	}
	for _, name := range order {
		t := byTopic[name]
		topics = append(topics, *t)
		if n := int32(len(t.Partitions)); minPartitions == 0 || n < minPartitions {
			minPartitions = n
		}
	}
	return topics, total, minPartitions
}

// SetupWithManager registers the controller. Groups are measured four at
// once: each measurement waits on broker round trips, and one at a time a
// few hundred groups would not fit in a lag period.
func (r *ConsumerGroupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&raftkav1.ConsumerGroup{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Named("consumergroup").
		Complete(r)
}
