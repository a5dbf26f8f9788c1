package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/specs"
)

// Options tune the controllers.
type Options struct {
	TopicResync time.Duration
	// UserResync is how often a User's credential and ACLs are checked on
	// the brokers, and set back where they changed there.
	UserResync time.Duration
	LagPeriod  time.Duration
	// BrokerHTTPAddr replaces the brokers' in-cluster DNS names for their
	// HTTP endpoints, for an operator that reaches them otherwise.
	BrokerHTTPAddr func(cluster *raftkav1.BrokerCluster, id int32) string
	// DefaultBrokerImage is the broker image of a BrokerCluster that names
	// none: the operator's own version of it.
	DefaultBrokerImage string
	// Operator are the operator's own pods, which the brokers'
	// NetworkPolicies admit.
	Operator specs.OperatorPods
	// TenantAdmission keeps the parameters of the tenant admission
	// policies (config/admission) in the operator's namespace: for an
	// operator that sees every namespace, as tenants need.
	TenantAdmission bool
}

// ClientOptions are the manager's client options. Secrets are read from
// the API server and never cached: the operator keeps no copy of every
// Secret in the cluster, and needs no right to list or watch them.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}}
}

// Setup registers every controller with the manager.
func Setup(mgr ctrl.Manager, brokers *brokerclient.Clients, opts Options) error {
	if opts.TopicResync <= 0 {
		opts.TopicResync = time.Minute
	}
	if opts.UserResync <= 0 {
		opts.UserResync = time.Minute
	}
	if opts.LagPeriod <= 0 {
		opts.LagPeriod = 15 * time.Second
	}
	secrets := &SecretCache{}
	if err := (&BrokerClusterReconciler{Client: mgr.GetClient(), Brokers: brokers, Secrets: secrets, HTTPAddr: opts.BrokerHTTPAddr, DefaultImage: opts.DefaultBrokerImage, Operator: opts.Operator,
		Recorder: mgr.GetEventRecorder("raftka-brokercluster")}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&TopicReconciler{Client: mgr.GetClient(), Brokers: brokers, Secrets: secrets, Resync: opts.TopicResync, HTTPAddr: opts.BrokerHTTPAddr,
		Recorder: mgr.GetEventRecorder("raftka-topic")}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&UserReconciler{Client: mgr.GetClient(), Brokers: brokers, Secrets: secrets, Resync: opts.UserResync}).SetupWithManager(mgr); err != nil {
		return err
	}
	if opts.TenantAdmission && opts.Operator.Namespace != "" {
		if err := (&TenantAdmissionReconciler{Client: mgr.GetClient(), Namespace: opts.Operator.Namespace}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return (&ConsumerGroupReconciler{Client: mgr.GetClient(), Brokers: brokers, Secrets: secrets, SyncPeriod: opts.LagPeriod, HTTPAddr: opts.BrokerHTTPAddr,
		Recorder: mgr.GetEventRecorder("raftka-consumergroup")}).SetupWithManager(mgr)
}
