// Command raftka-operator is the Raftka operator: it runs BrokerClusters,
// Topics and ConsumerGroups on Kubernetes.
package main

import (
	"flag"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/controllers"
	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/specs"
)

func main() {
	var (
		metricsAddr, probeAddr, namespaces, override, brokerImage string
		leaderElect                                               bool
		topicResync, lagPeriod                                    time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader among operator replicas")
	flag.StringVar(&namespaces, "watch-namespaces", "", "comma-separated namespaces to watch; all when empty")
	flag.StringVar(&override, "bootstrap-override", os.Getenv("RAFTKA_BOOTSTRAP_OVERRIDE"),
		"reach brokers at these addresses instead of the client Service, for an operator outside the cluster: namespace/name=host:port[,host:port][;...] (env RAFTKA_BOOTSTRAP_OVERRIDE)")
	flag.DurationVar(&topicResync, "topic-resync", time.Minute, "how often Topics are compared with the brokers, reverting changes made outside Kubernetes")
	flag.DurationVar(&lagPeriod, "lag-period", 15*time.Second, "how often ConsumerGroup lag is measured")
	flag.StringVar(&brokerImage, "default-broker-image", os.Getenv("RAFTKA_DEFAULT_BROKER_IMAGE"),
		"the broker image of a BrokerCluster whose spec.image is empty: the broker of the operator's own version, which the chart sets (env RAFTKA_DEFAULT_BROKER_IMAGE)")
	operatorNamespace := flag.String("operator-namespace", inClusterNamespace(),
		"the operator's namespace, which the brokers' NetworkPolicies admit (default: the namespace of its service account)")
	operatorLabels := flag.String("operator-pod-labels", "app.kubernetes.io/name=raftka-operator",
		"labels of the operator's pods, k=v,k=v, which the brokers' NetworkPolicies admit")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	podLabels, err := labels.ConvertSelectorToLabelsMap(*operatorLabels)
	if err != nil {
		log.Error(err, "bad --operator-pod-labels")
		os.Exit(2)
	}
	overrides, err := brokerclient.ParseOverride(override)
	if err != nil {
		log.Error(err, "bad --bootstrap-override")
		os.Exit(2)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(raftkav1.AddToScheme(scheme))
	cacheOpts := cache.Options{}
	if namespaces != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range strings.Split(namespaces, ",") {
			cacheOpts.DefaultNamespaces[strings.TrimSpace(ns)] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       "raftka-operator.raftka.io",
		Cache:                  cacheOpts,
		Client:                 controllers.ClientOptions(),
	})
	if err != nil {
		log.Error(err, "create manager")
		os.Exit(1)
	}
	brokers := &brokerclient.Clients{Override: overrides}
	defer brokers.Close()
	if err := controllers.Setup(mgr, brokers, controllers.Options{TopicResync: topicResync, LagPeriod: lagPeriod, DefaultBrokerImage: brokerImage,
		Operator: specs.OperatorPods{Namespace: *operatorNamespace, Labels: podLabels},
		// Tenants of other namespaces need an operator that sees them all.
		TenantAdmission: namespaces == ""}); err != nil {
		log.Error(err, "set up controllers")
		os.Exit(1)
	}
	utilruntime.Must(mgr.AddHealthzCheck("healthz", healthz.Ping))
	utilruntime.Must(mgr.AddReadyzCheck("readyz", healthz.Ping))
	log.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}

// inClusterNamespace is the namespace of the pod's service account, or
// empty outside a cluster.
func inClusterNamespace() string {
	data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
