package controllers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/tenancy"
)

// TopicFinalizer holds a Topic until its deletion policy was carried out.
const TopicFinalizer = "raftka.io/topic"

// TopicReconciler makes Kafka topics match Topic objects.
type TopicReconciler struct {
	client.Client
	Brokers *brokerclient.Clients
	// Secrets keeps the Secrets the brokers are reached with; shared by
	// the controllers (Setup).
	Secrets *SecretCache
	// Resync is how often a Ready topic is compared with the brokers again,
	// to revert changes made outside Kubernetes.
	Resync time.Duration
	// HTTPAddr is where the operator reaches a broker's HTTP endpoint,
	// which reports ordered growths; DNSHTTPAddr when nil.
	HTTPAddr func(cluster *raftkav1.BrokerCluster, id int32) string
	// Recorder reports a growth lifted at its bound.
	Recorder events.EventRecorder

	transient transientFailures
}

// +kubebuilder:rbac:groups=raftka.io,resources=topics,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=raftka.io,resources=topics/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=raftka.io,resources=topics/finalizers,verbs=update
// +kubebuilder:rbac:groups=raftka.io,resources=brokerclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile runs the steps for one Topic.
func (r *TopicReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var topic raftkav1.Topic
	if err := r.Get(ctx, req.NamespacedName, &topic); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := topic.DeepCopy()
	result, err := r.reconcile(ctx, &topic)
	topic.Status.ObservedGeneration = topic.Generation
	topic.Status.TopicName = topic.KafkaName()
	if topic.DeletionTimestamp.IsZero() {
		if uerr := patchStatus(ctx, r.Client, &topic, before, topic.Status, before.Status); uerr != nil {
			return ctrl.Result{}, uerr
		}
	}
	return result, err
}

func (r *TopicReconciler) reconcile(ctx context.Context, topic *raftkav1.Topic) (ctrl.Result, error) {
	if !topic.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, topic)
	}
	if controllerutil.AddFinalizer(topic, TopicFinalizer) {
		if err := r.Update(ctx, topic); err != nil {
			return ctrl.Result{}, err
		}
	}
	// Admission first: a Topic its cluster does not admit competes for no
	// name, or one tenant could hold another's topic.
	adm, cluster, err := r.admin(ctx, topic)
	if errors.As(err, new(errNotAdmitted)) {
		r.notReady(topic, raftkav1.ReasonNotAdmitted, err.Error())
		return ctrl.Result{RequeueAfter: r.Resync}, nil
	}
	if winner, oerr := r.owner(ctx, topic); oerr != nil {
		return ctrl.Result{}, oerr
	} else if winner != client.ObjectKeyFromObject(topic) {
		r.notReady(topic, raftkav1.ReasonResourceConflict, fmt.Sprintf("Topic %s already manages Kafka topic %s on this cluster", winner, topic.KafkaName()))
		return ctrl.Result{RequeueAfter: r.Resync}, nil
	}
	if err != nil {
		r.notReady(topic, raftkav1.ReasonClusterNotReady, err.Error())
		// Returned, so the workqueue retries with backoff; the cluster
		// watch also wakes this Topic when the cluster appears.
		return ctrl.Result{}, fmt.Errorf("cluster for topic %s: %w", topic.Name, err)
	}
	key := client.ObjectKeyFromObject(topic)
	reason, err := r.syncTopic(ctx, adm, topic, cluster.Spec.Replicas)
	if err == nil {
		r.observeGrowth(ctx, topic, cluster)
	}
	if err != nil {
		var notSupported errNotSupported
		if errors.As(err, &notSupported) {
			r.notReady(topic, raftkav1.ReasonNotSupported, err.Error())
			return ctrl.Result{RequeueAfter: r.Resync}, nil
		}
		var tooFew errNotEnoughBrokers
		if errors.As(err, &tooFew) {
			r.notReady(topic, raftkav1.ReasonNotEnoughBrokers, err.Error())
			return ctrl.Result{RequeueAfter: r.Resync}, nil
		}
		// A broker that restarts under a request (a rolling restart) is no
		// news about the topic: ask again soon, and report it only if it lasts.
		if r.transient.tolerate(key, err) {
			log.FromContext(ctx).Info("brokers did not answer, asking again", "topic", topic.KafkaName(), "error", err.Error())
			return ctrl.Result{RequeueAfter: transientRetryAfter}, nil
		}
		r.notReady(topic, raftkav1.ReasonBrokerError, err.Error())
		return ctrl.Result{}, err
	}
	r.transient.forget(key)
	if reason == raftkav1.ReasonReassigning {
		r.notReady(topic, reason, movingMessage(topic))
		return ctrl.Result{RequeueAfter: reassignPoll}, nil
	}
	message := fmt.Sprintf("topic %s has %d partitions", topic.KafkaName(), topic.Status.Partitions)
	if reason == "" {
		reason = readyReason(topic)
	}
	setCondition(&topic.Status.Conditions, topic.Generation, raftkav1.ConditionReady, true, reason, message)
	meta.RemoveStatusCondition(&topic.Status.Conditions, raftkav1.ConditionStalled)
	if topic.Status.Growth != nil {
		return ctrl.Result{RequeueAfter: min(r.Resync, growthPoll)}, nil
	}
	return ctrl.Result{RequeueAfter: r.Resync}, nil
}

// readyReason keeps the reason of an already Ready topic, so a periodic
// resync that changed nothing does not rewrite its status.
func readyReason(topic *raftkav1.Topic) string {
	for _, c := range topic.Status.Conditions {
		if c.Type == raftkav1.ConditionReady && c.Status == "True" {
			return c.Reason
		}
		if c.Type == raftkav1.ConditionReady && c.Reason == raftkav1.ReasonReassigning {
			return raftkav1.ReasonUpdated
		}
	}
	return raftkav1.ReasonCreated
}

func (r *TopicReconciler) notReady(topic *raftkav1.Topic, reason, message string) {
	setCondition(&topic.Status.Conditions, topic.Generation, raftkav1.ConditionReady, false, reason, message)
	// A refused spec or a name conflict will not heal by retrying: kstatus
	// (Flux, Argo CD, kpt) reads Stalled=True as Failed rather than InProgress.
	stalled := reason == raftkav1.ReasonNotSupported || reason == raftkav1.ReasonResourceConflict || reason == raftkav1.ReasonNotAdmitted
	setCondition(&topic.Status.Conditions, topic.Generation, raftkav1.ConditionStalled, stalled, reason, message)
}

type errNotSupported struct{ msg string }

func (e errNotSupported) Error() string { return e.msg }

// owner returns the Topic that manages this Kafka topic: of all Topics
// naming it on the same cluster, in any namespace (tenants share a
// cluster), the oldest.
func (r *TopicReconciler) owner(ctx context.Context, topic *raftkav1.Topic) (types.NamespacedName, error) {
	var all raftkav1.TopicList
	if err := r.List(ctx, &all); err != nil {
		return types.NamespacedName{}, err
	}
	var same []client.Object
	for i, t := range all.Items {
		if sameCluster(t.Namespace, t.Spec.ClusterRef, topic.Namespace, topic.Spec.ClusterRef) && t.KafkaName() == topic.KafkaName() && t.DeletionTimestamp.IsZero() {
			// A Topic its cluster does not admit competes for no name.
			if cluster, err := tenantCluster(ctx, r.Client, t.Namespace, t.Spec.ClusterRef); errors.As(err, new(errNotAdmitted)) ||
				err == nil && tenancy.CheckTopic(cluster, t.Namespace, t.KafkaName()) != nil {
				continue
			}
			same = append(same, &all.Items[i])
		}
	}
	return oldest(same, client.ObjectKeyFromObject(topic)), nil
}

// sameCluster tells whether two objects' references name one cluster.
func sameCluster(nsA string, a raftkav1.ClusterReference, nsB string, b raftkav1.ClusterReference) bool {
	an, aname := a.ClusterKey(nsA)
	bn, bname := b.ClusterKey(nsB)
	return an == bn && aname == bname
}

// oldest names, of several objects that name the same Kafka resource, the
// one that manages it: the oldest, then the first by namespace and name;
// fallback when there are none.
func oldest(objs []client.Object, fallback types.NamespacedName) types.NamespacedName {
	if len(objs) == 0 {
		return fallback
	}
	sort.Slice(objs, func(i, j int) bool {
		ti, tj := objs[i].GetCreationTimestamp(), objs[j].GetCreationTimestamp()
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return client.ObjectKeyFromObject(objs[i]).String() < client.ObjectKeyFromObject(objs[j]).String()
	})
	return client.ObjectKeyFromObject(objs[0])
}

func (r *TopicReconciler) admin(ctx context.Context, topic *raftkav1.Topic) (*kadm.Client, *raftkav1.BrokerCluster, error) {
	cluster, err := tenantCluster(ctx, r.Client, topic.Namespace, topic.Spec.ClusterRef)
	if err != nil {
		return nil, nil, err
	}
	if err := tenancy.CheckTopic(cluster, topic.Namespace, topic.KafkaName()); err != nil {
		return nil, nil, errNotAdmitted{err}
	}
	access, err := clusterAccess(ctx, r.Client, r.Brokers, r.Secrets, cluster)
	if err != nil {
		return nil, nil, err
	}
	adm, err := r.Brokers.Admin(access)
	return adm, cluster, err
}

// desiredConfigs are the topic configs the spec sets.
func desiredConfigs(topic *raftkav1.Topic) map[string]string {
	want := map[string]string{}
	for k, v := range topic.Spec.Config {
		want[k] = v
	}
	if topic.Spec.MinInSyncReplicas != nil {
		want["min.insync.replicas"] = strconv.Itoa(int(*topic.Spec.MinInSyncReplicas))
	}
	return want
}

// ensureTopic creates the topic, grows its partitions and sets its
// configs, and moves replicas to its replication factor over the
// cluster's first brokers, from the brokers' view of it; it returns the
// Ready reason for what it did, and whether it changed anything.
func (r *TopicReconciler) ensureTopic(ctx context.Context, adm *kadm.Client, topic *raftkav1.Topic, brokers int32, view topicView) (string, bool, error) {
	name := topic.KafkaName()
	want := desiredConfigs(topic)
	if !view.exists {
		configs := map[string]*string{}
		for k, v := range want {
			configs[k] = &v
		}
		resp, err := adm.CreateTopic(ctx, topic.Spec.Partitions, int16(topic.Spec.ReplicationFactor), configs, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			if errors.Is(err, kerr.InvalidConfig) || errors.Is(err, kerr.InvalidReplicationFactor) || errors.Is(err, kerr.InvalidTopicException) {
				return "", false, errNotSupported{fmt.Sprintf("the brokers refused topic %s: %v %s", name, err, resp.ErrMessage)}
			}
			return "", false, fmt.Errorf("create topic %s: %w", name, err)
		}
		log.FromContext(ctx).Info("topic created", "topic", name, "partitions", topic.Spec.Partitions)
		return raftkav1.ReasonCreated, true, nil
	}
	reason, changed := "", false
	if have := int32(len(view.detail.Partitions)); have < topic.Spec.Partitions {
		resp, err := adm.UpdatePartitions(ctx, int(topic.Spec.Partitions), name)
		if err == nil {
			err = resp[name].Err
		}
		if err != nil {
			return "", false, fmt.Errorf("grow topic %s to %d partitions: %w", name, topic.Spec.Partitions, err)
		}
		log.FromContext(ctx).Info("topic partitions grown", "topic", name, "from", have, "to", topic.Spec.Partitions)
		reason, changed = raftkav1.ReasonUpdated, true
	}
	altered, err := r.syncConfigs(ctx, adm, name, want, view.configs)
	if err != nil {
		return "", false, err
	}
	if altered {
		reason, changed = raftkav1.ReasonUpdated, true
	}
	moving, started, err := r.ensureReplication(ctx, adm, topic, view, brokers)
	if err != nil {
		return "", false, err
	}
	if moving > 0 {
		reason = raftkav1.ReasonReassigning
	}
	return reason, changed || started > 0, nil
}

// syncConfigs sets the wanted configs and removes any other set on the
// brokers (drift made outside Kubernetes), in one incremental alter.
func (r *TopicReconciler) syncConfigs(ctx context.Context, adm *kadm.Client, name string, want, have map[string]string) (bool, error) {
	var alters []kadm.AlterConfig
	for k, v := range want {
		if have[k] != v {
			alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
		}
	}
	if len(alters) == 0 {
		return false, nil
	}
	resp, err := adm.AlterTopicConfigs(ctx, alters, name)
	if err == nil {
		var r kadm.AlterConfigsResponse
		r, err = resp.On(name, nil)
		if err == nil {
			err = r.Err
		}
		if errors.Is(err, kerr.InvalidConfig) {
			return false, errNotSupported{fmt.Sprintf("the brokers refused the configs of topic %s: %s", name, r.ErrMessage)}
		}
	}
	if err != nil {
		return false, fmt.Errorf("configure topic %s: %w", name, err)
	}
	log.FromContext(ctx).Info("topic configs updated", "topic", name, "changes", len(alters))
	return true, nil
}

// finalize carries out the deletion policy, then lets the Topic go.
func (r *TopicReconciler) finalize(ctx context.Context, topic *raftkav1.Topic) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(topic, TopicFinalizer) {
		return ctrl.Result{}, nil
	}
	if topic.Spec.DeletionPolicy == raftkav1.DeletionPolicyDelete && managedKafkaTopic(topic) {
		adm, _, err := r.admin(ctx, topic)
		if err == nil {
			resp, derr := adm.DeleteTopics(ctx, topic.KafkaName())
			if derr == nil {
				derr = resp[topic.KafkaName()].Err
			}
			if derr != nil && !errors.Is(derr, kerr.UnknownTopicOrPartition) {
				return ctrl.Result{}, fmt.Errorf("delete topic %s: %w", topic.KafkaName(), derr)
			}
			log.FromContext(ctx).Info("topic deleted", "topic", topic.KafkaName())
		} else if !errors.Is(err, errClusterMissing) && !errors.As(err, new(errNotAdmitted)) {
			return ctrl.Result{}, err
		}
	}
	controllerutil.RemoveFinalizer(topic, TopicFinalizer)
	return ctrl.Result{}, r.Update(ctx, topic)
}

// managedKafkaTopic is false for a Topic that lost a conflict or was not
// admitted: it never managed the Kafka topic and must not delete it.
func managedKafkaTopic(topic *raftkav1.Topic) bool {
	for _, c := range topic.Status.Conditions {
		if c.Type == raftkav1.ConditionReady && (c.Reason == raftkav1.ReasonResourceConflict || c.Reason == raftkav1.ReasonNotAdmitted) {
			return false
		}
	}
	return true
}

// errClusterMissing: the BrokerCluster a Topic names does not exist. A
// Topic deleted then has no Kafka topic left to delete.
var errClusterMissing = errors.New("BrokerCluster not found")

// topicWorkers is how many Topics are reconciled at once.
const topicWorkers = 64

// SetupWithManager registers the controller: Topics, and the Topics of a
// BrokerCluster when it appears, goes or its spec changes. Not at its
// status changes: a Topic reads only the cluster's spec, and each status
// write of a cluster carrying 1,000 Topics queued 1,000 reconciles.
func (r *TopicReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&raftkav1.Topic{}).
		Watches(&raftkav1.BrokerCluster{}, handler.EnqueueRequestsFromMapFunc(r.topicsOfCluster), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A new topic waits about a second for its partitions' first Raft
		// elections (the brokers answer CreateTopics once they are led), so
		// a GitOps sync of 1,000 Topics needs many at once to be Ready within
		// a minute; the reconciles wait on the brokers, not on the CPU.
		WithOptions(controller.Options{MaxConcurrentReconciles: topicWorkers}).
		Named("topic").
		Complete(r)
}

func (r *TopicReconciler) topicsOfCluster(ctx context.Context, obj client.Object) []ctrl.Request {
	var topics raftkav1.TopicList
	if err := r.List(ctx, &topics); err != nil {
		return nil
	}
	var reqs []ctrl.Request
	for _, t := range topics.Items {
		if ns, name := t.Spec.ClusterRef.ClusterKey(t.Namespace); ns == obj.GetNamespace() && name == obj.GetName() {
			reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: t.Namespace, Name: t.Name}})
		}
	}
	return reqs
}

// A Topic rides out this many consecutive retryable broker errors, each
// retried after transientRetryAfter, before its status reports them.
const (
	transientRetries    = 3
	transientRetryAfter = 2 * time.Second
)

// transientFailures counts consecutive retryable broker errors per Topic.
type transientFailures struct {
	mu    sync.Mutex
	count map[types.NamespacedName]int
}

// tolerate says whether err is worth another try before it is reported.
func (f *transientFailures) tolerate(key types.NamespacedName, err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.count == nil {
		f.count = map[types.NamespacedName]int{}
	}
	if !retryableBrokerError(err) || f.count[key] >= transientRetries {
		delete(f.count, key)
		return false
	}
	f.count[key]++
	return true
}

func (f *transientFailures) forget(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.count, key)
}

// retryableBrokerError: a connection that died or could not be made, a
// timeout, or a Kafka error code that Kafka calls retriable; for a request
// that went to several brokers, every failed piece must be one of those.
func retryableBrokerError(err error) bool {
	var shards *kadm.ShardErrors
	if errors.As(err, &shards) && len(shards.Errs) > 0 {
		for _, s := range shards.Errs {
			if !retryableBrokerError(s.Err) {
				return false
			}
		}
		return true
	}
	// franz-go does not retry a refused dial itself, but a broker pod
	// that restarts refuses connections for a moment.
	var netErr *net.OpError
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) || kgo.IsRetryableBrokerErr(err) || kerr.IsRetriable(err)
}
