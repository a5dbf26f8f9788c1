package controllers

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/tenancy"
)

// TenantAdmissionReconciler keeps the parameters of the API server's
// tenant admission policies (config/admission) in step with the
// BrokerClusters' spec.tenants and the namespaces' labels: the ConfigMap
// tenancy.AdmissionConfigMap in the operator's namespace. So a Topic, User
// or ConsumerGroup that its namespace may not have is refused when it is
// applied, not only marked NotAdmitted afterwards.
type TenantAdmissionReconciler struct {
	client.Client
	// Namespace is the operator's, where the ConfigMap lives.
	Namespace string
}

// +kubebuilder:rbac:groups=raftka.io,resources=brokerclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch

// Reconcile writes the ConfigMap's data where it differs from what the
// clusters and namespaces give; it runs for the one ConfigMap whatever
// changed.
func (r *TenantAdmissionReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	want, err := r.parameters(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.write(ctx, want)
}

// parameters derives the ConfigMap's data from the world.
func (r *TenantAdmissionReconciler) parameters(ctx context.Context) (map[string]string, error) {
	var clusters raftkav1.BrokerClusterList
	if err := r.List(ctx, &clusters); err != nil {
		return nil, err
	}
	var namespaces corev1.NamespaceList
	if err := r.List(ctx, &namespaces); err != nil {
		return nil, err
	}
	labels := make(map[string]map[string]string, len(namespaces.Items))
	for _, ns := range namespaces.Items {
		labels[ns.Name] = ns.Labels
	}
	return tenancy.AdmissionParameters(clusters.Items, labels), nil
}

// write creates the ConfigMap, or updates its data where it changed.
func (r *TenantAdmissionReconciler) write(ctx context.Context, data map[string]string) error {
	var cm corev1.ConfigMap
	err := r.Get(ctx, r.key(), &cm)
	if apierrors.IsNotFound(err) {
		cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: tenancy.AdmissionConfigMap,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "raftka-operator"}}, Data: data}
		log.FromContext(ctx).Info("tenant admission parameters created", "keys", len(data))
		return r.Create(ctx, &cm)
	}
	if err != nil {
		return err
	}
	if maps.Equal(cm.Data, data) {
		return nil
	}
	cm.Data = data
	log.FromContext(ctx).Info("tenant admission parameters updated", "keys", len(data))
	return r.Update(ctx, &cm)
}

func (r *TenantAdmissionReconciler) key() types.NamespacedName {
	return types.NamespacedName{Namespace: r.Namespace, Name: tenancy.AdmissionConfigMap}
}

// SetupWithManager runs the controller on any BrokerCluster, any change of
// a namespace's labels, and any change to the ConfigMap itself (set back).
func (r *TenantAdmissionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []ctrl.Request {
		return []ctrl.Request{{NamespacedName: r.key()}}
	})
	own := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Namespace && o.GetName() == tenancy.AdmissionConfigMap
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenant-admission").
		Watches(&raftkav1.BrokerCluster{}, one, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Namespace{}, one, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&corev1.ConfigMap{}, one, builder.WithPredicates(own)).
		Complete(r)
}
