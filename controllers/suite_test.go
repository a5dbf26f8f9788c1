package controllers

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/specs"
)

// The suite runs one real API server (envtest) and one real 3-broker
// cluster for every test in the package; each test uses its own namespace.
var (
	k8s     client.Client
	brokers *brokertest.Cluster
	// pool is the controllers' way to the brokers.
	pool *brokerclient.Clients
	// httpOverride maps "namespace/name" of a BrokerCluster to its
	// brokers' HTTP addresses, by id.
	httpOverride sync.Map
	scheme       = runtime.NewScheme()
)

// defaultBrokerImage is the suite operator's --default-broker-image.
const defaultBrokerImage = "raftka/broker:default-of-the-operator"

// suiteT lets brokertest, which wants a testing.TB, live for the package.
type suiteT struct {
	testing.TB
	cleanups []func()
}

func (s *suiteT) Cleanup(f func())                  { s.cleanups = append(s.cleanups, f) }
func (s *suiteT) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (s *suiteT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (s *suiteT) Logf(format string, args ...any)   { fmt.Printf(format+"\n", args...) }
func (s *suiteT) Helper()                           {}
func (s *suiteT) Failed() bool                      { return false }
func (s *suiteT) TempDir() string {
	dir, err := os.MkdirTemp("", "raftka-suite")
	if err != nil {
		panic(err)
	}
	s.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			s.Logf("remove %s: %v", dir, err)
		}
	})
	return dir
}

// benchmarking: the run was asked for benchmarks (-test.bench).
func benchmarking() bool {
	f := flag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if testing.Short() || os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Println("controllers: KUBEBUILDER_ASSETS is not set (make test sets it from hack/envtest-assets.sh); running the tests that need no API server")
		return m.Run()
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(raftkav1.AddToScheme(scheme))

	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		fmt.Println("envtest:", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Println("envtest stop:", err)
		}
	}()

	st := &suiteT{}
	defer func() {
		for i := len(st.cleanups) - 1; i >= 0; i-- {
			st.cleanups[i]()
		}
	}()
	brokers = brokertest.Start(st, brokertest.Options{Brokers: 3})

	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	// The operator's namespace, where it keeps the tenant admission
	// policies' parameters.
	if err := k8s.Create(context.Background(), namespaceObject("raftka-system")); err != nil {
		fmt.Println(err)
		return 1
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Client: ClientOptions()})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	// Every BrokerCluster named "events", in any test namespace, is the
	// real cluster started above.
	pool = &brokerclient.Clients{Override: overrideAll(brokers.AllAddrs())}
	defer pool.Close()
	// envtest runs no pods: the operator asks the real brokers' HTTP
	// endpoints (the suite cluster's, or those a test registered).
	httpAddr := func(c *raftkav1.BrokerCluster, id int32) string {
		if addrs, ok := httpOverride.Load(c.Namespace + "/" + c.Name); ok {
			return addrs.([]string)[id]
		}
		return brokers.Brokers[id].HTTPAddr
	}
	// Tests resync every 2 s, to see drift reverted soon; benchmarks run
	// the operator's own periods, as users do (1,000 Topics resynced every
	// 2 s would be a load no user sees).
	resync := 2 * time.Second
	if benchmarking() {
		resync = 0
	}
	if err := Setup(mgr, pool, Options{TopicResync: resync, UserResync: resync, LagPeriod: time.Second, BrokerHTTPAddr: httpAddr, DefaultBrokerImage: defaultBrokerImage,
		Operator:        specs.OperatorPods{Namespace: "raftka-system", Labels: map[string]string{"app.kubernetes.io/name": "raftka-operator"}},
		TenantAdmission: true}); err != nil {
		fmt.Println(err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Println("manager:", err)
		}
	}()
	return m.Run()
}

func zapLevel() zapLevelT {
	if os.Getenv("RAFTKA_TEST_VERBOSE") != "" {
		return -1
	}
	return 2 // errors only
}

// overrideAll points the BrokerCluster "events" of every namespace that
// newNamespace makes at the real brokers.
func overrideAll(addrs []string) map[string][]string {
	m := map[string][]string{}
	for i := 0; i < 64; i++ {
		m[fmt.Sprintf("test-%d/events", i)] = addrs
	}
	return m
}

var nsCounter int

// newNamespace creates a namespace for one test, with a BrokerCluster
// named "events" that stands for the real brokers.
func newNamespace(t testing.TB) string {
	t.Helper()
	if k8s == nil {
		t.Skip("needs the envtest API server")
	}
	ns := fmt.Sprintf("test-%d", nsCounter)
	nsCounter++
	mustCreate(t, namespaceObject(ns))
	return ns
}

func mustCreate(t testing.TB, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// eventually polls cond for up to 30 s.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	eventually2(t, 30*time.Second, what, cond)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
