package controllers

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/rollout"
	"github.com/raftka/raftka/internal/specs"
)

// BrokerClusterReconciler runs the brokers of a BrokerCluster.
type BrokerClusterReconciler struct {
	client.Client
	Brokers *brokerclient.Clients
	// Secrets keeps the Secrets the brokers are reached with; shared by
	// the controllers (Setup).
	Secrets *SecretCache
	// HTTPAddr is where the operator reaches a broker's HTTP endpoint (its
	// safe-restart check and identity); by default the broker's stable DNS
	// name.
	HTTPAddr func(cluster *raftkav1.BrokerCluster, id int32) string
	Recorder events.EventRecorder
	// DefaultImage is the broker image of a BrokerCluster without one.
	DefaultImage string
	// Operator are the operator's own pods, which a cluster's
	// NetworkPolicy admits.
	Operator specs.OperatorPods

	waves moveWaves
	// throttles keeps the replication throttle's measurements.
	throttles throttleMemory
}

// +kubebuilder:rbac:groups=raftka.io,resources=brokerclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=raftka.io,resources=brokerclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=raftka.io,resources=brokerclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// brokerGauges are a cluster's brokers by state, ready or desired, for
// the broker-not-ready alert and the dashboards.
var brokerGauges = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "raftka_brokercluster_brokers",
	Help: "A BrokerCluster's brokers: state=desired is spec.replicas, state=ready those whose pod is ready."}, []string{"namespace", "cluster", "state"})

func init() { metrics.Registry.MustRegister(brokerGauges) }

// Reconcile runs the steps for one BrokerCluster.
func (r *BrokerClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cluster raftkav1.BrokerCluster
	if err := r.Get(ctx, req.NamespacedName, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			r.waves.forget(req.NamespacedName)
			r.throttles.forget(req.NamespacedName)
			brokerGauges.DeletePartialMatch(prometheus.Labels{"namespace": req.Namespace, "cluster": req.Name})
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := cluster.DeepCopy()
	result, err := r.reconcile(ctx, &cluster)
	cluster.Status.ObservedGeneration = cluster.Generation
	if uerr := patchStatus(ctx, r.Client, &cluster, before, cluster.Status, before.Status); uerr != nil {
		return ctrl.Result{}, uerr
	}
	return result, err
}

func (r *BrokerClusterReconciler) reconcile(ctx context.Context, c *raftkav1.BrokerCluster) (ctrl.Result, error) {
	if err := r.validateSpec(c); err != nil {
		setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionReady, false, "InvalidSpec", err.Error())
		setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionDegraded, true, "InvalidSpec", err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	founding, err := r.founding(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensureInternalCredentials(ctx, c); err != nil {
		return ctrl.Result{}, err
	}
	raftCert, err := r.ensureRaftCertificate(ctx, c, founding)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensureClientsCA(ctx, c); err != nil {
		return ctrl.Result{}, err
	}
	cm := specs.BuildConfigMap(c, founding)
	objects := []client.Object{cm, specs.BuildHeadlessService(c), specs.BuildClientService(c), specs.BuildPodDisruptionBudget(c)}
	for _, obj := range objects {
		if err := r.apply(ctx, c, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.applyNetworkPolicy(ctx, c); err != nil {
		return ctrl.Result{}, err
	}
	external, awaiting, err := r.applyExternalServices(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	hostIPs := r.hostIPs(ctx, c)
	if err := r.ensureListenerCertificate(ctx, c, external, hostIPs); err != nil {
		return ctrl.Result{}, err
	}
	// Asked once, when first needed: by a scale-in before the StatefulSet
	// is written, else after the rolling restart's step, which brokers
	// that do not answer must not hold up.
	view := sync.OnceValue(func() brokersView { return r.viewBrokers(ctx, c) })
	// A renewed Raft certificate rolls the brokers: Dragonboat reads the
	// one it serves once, at start.
	sts, blocked, err := r.applyStatefulSet(ctx, c, founding, specs.ObjectHash([]string{configHash(cm), raftCert}), external, view)
	if err != nil {
		return ctrl.Result{}, err
	}
	waiting, err := r.rollBrokers(ctx, c, sts, founding.Transport())
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.observe(ctx, c, sts, view(), blocked, waiting); err != nil {
		return ctrl.Result{}, err
	}
	r.observeListeners(c, external, hostIPs)
	balance, err := r.rebalance(ctx, c, view())
	if err != nil {
		return ctrl.Result{}, err
	}
	r.tuneReplicationThrottle(ctx, c, view(), balance.moving > 0 || catchingUp(c))
	changingVoters := r.syncMetadataVoters(ctx, c, view())
	setRebalancing(c, balance)
	r.unregisterRemoved(ctx, c, ptr.Deref(sts.Spec.Replicas, 0), view())
	if blocked != "" || waiting != "" || awaiting || changingVoters || c.Status.ReadyReplicas < c.Spec.Replicas || balance.moving > 0 || balance.planned > 0 {
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	}
	if c.Status.ReplicationThrottle != nil {
		// The throttle learns the producers' latency at rest in windows
		// between reconciles.
		return ctrl.Result{RequeueAfter: throttleRestWindow}, nil
	}
	return ctrl.Result{RequeueAfter: time.Minute}, nil
}

// catchingUp: some broker's replicas are not in sync yet (status.brokers).
func catchingUp(c *raftkav1.BrokerCluster) bool {
	for _, b := range c.Status.Brokers {
		if b.CatchingUp > 0 {
			return true
		}
	}
	return false
}

// validateSpec refuses what no reconcile can mend: broker configs the
// broker does not know, and no image to run.
func (r *BrokerClusterReconciler) validateSpec(c *raftkav1.BrokerCluster) error {
	if err := specs.ValidateConfig(c); err != nil {
		return err
	}
	if err := specs.ValidateListeners(c); err != nil {
		return err
	}
	_, err := specs.BrokerImage(c, r.DefaultImage)
	return err
}

// founding is what the cluster's creation fixed (the brokers that
// founded the metadata group, --metadata-voters, and whether the Raft
// transport is mutual TLS), read back from the ConfigMap, which records
// it; the voters since are the metadata group's own (syncMetadataVoters).
func (r *BrokerClusterReconciler) founding(ctx context.Context, c *raftkav1.BrokerCluster) (specs.Founding, error) {
	return foundingOf(ctx, r.Client, c)
}

func foundingOf(ctx context.Context, r client.Reader, c *raftkav1.BrokerCluster) (specs.Founding, error) {
	var cm corev1.ConfigMap
	err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: specs.ConfigMapName(c)}, &cm)
	if apierrors.IsNotFound(err) {
		return specs.NewFounding(c), nil
	}
	if err != nil {
		return specs.Founding{}, err
	}
	return specs.FoundingOf(c, &cm), nil
}

// fieldOwner names the operator in the managed fields of what it applies.
const fieldOwner = client.FieldOwner("raftka-operator")

// apply writes a built object with server-side apply: the fields it sets
// are the operator's, so a hand edit of one is reverted at the next
// reconcile (the owned objects' watch triggers one), while fields others
// set, the API server's defaults among them, stay; an apply that changes
// nothing writes nothing. obj is updated to the object as stored.
func (r *BrokerClusterReconciler) apply(ctx context.Context, owner *raftkav1.BrokerCluster, obj client.Object) error {
	if err := controllerutil.SetControllerReference(owner, obj, r.Scheme()); err != nil {
		return err
	}
	gvk, err := apiutil.GVKForObject(obj, r.Scheme())
	if err != nil {
		return err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), fieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
}

// applyNetworkPolicy writes the brokers' NetworkPolicy when the spec asks
// for one, and deletes it when it no longer does.
func (r *BrokerClusterReconciler) applyNetworkPolicy(ctx context.Context, c *raftkav1.BrokerCluster) error {
	if specs.NetworkPolicyEnabled(c) {
		if !r.Operator.Known() {
			// A policy that does not name the operator's pods would shut
			// the operator out of its own brokers.
			return fmt.Errorf("spec.networkPolicy: the operator does not know its namespace and pod labels (--operator-namespace, --operator-pod-labels)")
		}
		return r.apply(ctx, c, specs.BuildNetworkPolicy(c, r.Operator))
	}
	var current networkingv1.NetworkPolicy
	err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: specs.NetworkPolicyName(c)}, &current)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(&current, c) {
		return nil
	}
	return client.IgnoreNotFound(r.Delete(ctx, &current))
}

// configHash changes whenever the brokers' configuration does.
func configHash(cm *corev1.ConfigMap) string { return specs.ObjectHash(cm.Data) }

// applyStatefulSet writes the StatefulSet, holding back a scale-in while
// brokers to be removed still host partition replicas.
func (r *BrokerClusterReconciler) applyStatefulSet(ctx context.Context, c *raftkav1.BrokerCluster, founding specs.Founding, hash string, external specs.ExternalAddresses, view func() brokersView) (*appsv1.StatefulSet, string, error) {
	var current appsv1.StatefulSet
	err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: specs.StatefulSetName(c)}, &current)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, "", err
	}
	replicas, blocked := c.Spec.Replicas, ""
	if err == nil && current.Spec.Replicas != nil && *current.Spec.Replicas > c.Spec.Replicas {
		switch v := view(); {
		case v.mdErr != nil:
			replicas, blocked = *current.Spec.Replicas, "scale-in waits: cannot ask the brokers which partitions they host: "+v.mdErr.Error()
		case v.quorumErr != nil:
			replicas, blocked = *current.Spec.Replicas, "scale-in waits: cannot ask the brokers which of them vote in the metadata group: "+v.quorumErr.Error()
		default:
			replicas, blocked = rollout.ScaleIn(c.Spec.Replicas, *current.Spec.Replicas, v.quorum.Voters, v.hosted)
		}
	}
	// The builders see the image the brokers run; spec.image, git's, is
	// never written.
	built := c.DeepCopy()
	built.Spec.Image, _ = specs.BrokerImage(c, r.DefaultImage)
	desired := specs.BuildStatefulSet(built, founding, replicas, hash, external)
	if err == nil {
		// Claim templates are immutable: a changed storage spec applies
		// to no existing StatefulSet.
		desired.Spec.VolumeClaimTemplates = current.Spec.VolumeClaimTemplates
	}
	if err := r.apply(ctx, c, desired); err != nil {
		return nil, "", err
	}
	return desired, blocked, nil
}

// rollBrokers restarts one outdated broker when every broker is ready and
// the broker itself says each of its Raft groups keeps a quorum without it.
func (r *BrokerClusterReconciler) rollBrokers(ctx context.Context, c *raftkav1.BrokerCluster, sts *appsv1.StatefulSet, transport specs.Transport) (string, error) {
	pods, err := r.pods(ctx, c)
	if err != nil {
		return "", err
	}
	var states []rollout.Pod
	for _, p := range pods {
		states = append(states, rollout.Pod{Ordinal: ordinalOf(p.Name), Ready: podReady(&p), Terminating: !p.DeletionTimestamp.IsZero(),
			Revision: p.Labels[appsv1.ControllerRevisionHashLabelKey], Transport: specs.PodTransport(&p).String()})
	}
	if moves := rollout.TransportMoves(states, transport.String()); len(moves) > 0 {
		return r.moveTransport(ctx, c, pods, moves, transport)
	}
	if sts.Status.UpdateRevision == "" {
		return "", nil
	}
	id, restart, wait := rollout.NextRestart(states, ptr.Deref(sts.Spec.Replicas, 0), sts.Status.UpdateRevision)
	if !restart {
		return wait, nil
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	check, err := brokerclient.SafeToRestart(cctx, r.HTTPAddr(c, id))
	cancel()
	if err != nil {
		return fmt.Sprintf("rolling update waits: broker %d did not answer the safe-restart check: %v", id, err), nil
	}
	if !check.OK {
		return fmt.Sprintf("rolling update waits: restarting broker %d now would lose a quorum: %s", id, strings.Join(check.Reasons, "; ")), nil
	}
	for _, p := range pods {
		if ordinalOf(p.Name) == id {
			log.FromContext(ctx).Info("restarting broker for rolling update", "broker", id, "revision", sts.Status.UpdateRevision)
			if err := r.Delete(ctx, &p); err != nil && !apierrors.IsNotFound(err) {
				return "", err
			}
		}
	}
	return fmt.Sprintf("rolling update: broker %d restarting", id), nil
}

// moveTransport restarts the brokers of moves at once onto transport
// (spec.interBrokerTLS): no safe-restart check holds them, as brokers
// of two transports cannot speak to each other anyway.
func (r *BrokerClusterReconciler) moveTransport(ctx context.Context, c *raftkav1.BrokerCluster, pods []corev1.Pod, moves []int32, transport specs.Transport) (string, error) {
	log.FromContext(ctx).Info("restarting brokers at once onto another transport", "brokers", moves, "transport", transport.String())
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "MovingTransport", "Restart",
		"restarting brokers %v at once onto %s: brokers of two transports cannot speak to each other", moves, transport)
	for _, p := range pods {
		if slices.Contains(moves, ordinalOf(p.Name)) {
			if err := r.Delete(ctx, &p); err != nil && !apierrors.IsNotFound(err) {
				return "", err
			}
		}
	}
	return fmt.Sprintf("moving onto %s: brokers %v restarting at once", transport, moves), nil
}

func (r *BrokerClusterReconciler) pods(ctx context.Context, c *raftkav1.BrokerCluster) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabels(specs.Labels(c))); err != nil {
		return nil, err
	}
	sort.Slice(pods.Items, func(i, j int) bool { return ordinalOf(pods.Items[i].Name) < ordinalOf(pods.Items[j].Name) })
	return pods.Items, nil
}

func ordinalOf(name string) int32 {
	i := strings.LastIndex(name, "-")
	n, _ := strconv.Atoi(name[i+1:])
	return int32(n)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// observe derives the status from the StatefulSet, its pods and the
// brokers' view.
func (r *BrokerClusterReconciler) observe(ctx context.Context, c *raftkav1.BrokerCluster, sts *appsv1.StatefulSet, view brokersView, blocked, waiting string) error {
	pods, err := r.pods(ctx, c)
	if err != nil {
		return err
	}
	c.Status.BootstrapServers = specs.BootstrapServers(c)
	var ready int32
	for i := range pods {
		if podReady(&pods[i]) {
			ready++
		}
	}
	c.Status.Brokers = r.observeBrokers(ctx, c, pods, view)
	c.Status.ReadyReplicas = ready
	brokerGauges.WithLabelValues(c.Namespace, c.Name, "ready").Set(float64(ready))
	brokerGauges.WithLabelValues(c.Namespace, c.Name, "desired").Set(float64(c.Spec.Replicas))
	rolling := waiting != "" || sts.Status.UpdateRevision != "" && sts.Status.UpdateRevision != sts.Status.CurrentRevision
	want := ptr.Deref(sts.Spec.Replicas, 0)
	if ready >= want {
		setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionReady, true, "BrokersReady", fmt.Sprintf("%d brokers ready", ready))
	} else {
		setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionReady, false, "BrokersNotReady", fmt.Sprintf("%d of %d brokers ready", ready, want))
	}
	switch {
	case blocked != "":
		setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionProgressing, false, "ScaleInBlocked", blocked)
	case rolling:
		msg := waiting
		if msg == "" {
			msg = "rolling update in progress"
		}
		setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionProgressing, true, "RollingUpdate", msg)
	case ready < want:
		setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionProgressing, true, "BrokersStarting", fmt.Sprintf("%d of %d brokers ready", ready, want))
	default:
		setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionProgressing, false, "Reconciled", fmt.Sprintf("%d brokers ready", ready))
	}
	setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionDegraded, false, "Reconciled", "")
	return nil
}

func clusterOfPod(_ context.Context, obj client.Object) []ctrl.Request {
	l := obj.GetLabels()
	if l[specs.LabelManagedBy] != "raftka-operator" || l[specs.LabelCluster] == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: l[specs.LabelCluster]}}}
}

// DNSHTTPAddr is a broker's HTTP endpoint at its stable DNS name.
func DNSHTTPAddr(c *raftkav1.BrokerCluster, id int32) string {
	return fmt.Sprintf("%s:%d", specs.BrokerHost(c, id), specs.HTTPPort)
}

// SetupWithManager registers the controller and what it owns.
func (r *BrokerClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.HTTPAddr == nil {
		r.HTTPAddr = DNSHTTPAddr
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&raftkav1.BrokerCluster{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		// Broker pods belong to the StatefulSet; their readiness paces the
		// rolling update, so they wake their cluster too.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(clusterOfPod)).
		Named("brokercluster").
		// A cluster whose brokers do not answer holds its reconcile for the
		// requests' timeouts (up to ~10 s): the others must not queue behind it.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}
