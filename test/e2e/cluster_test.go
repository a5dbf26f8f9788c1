//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

// env is what hack/e2e-cluster.sh env exports.
type env struct {
	kube       client.WithWatch
	kubeconfig string
	dns        string // the cluster DNS, host:port
	containerd string // the node's containerd socket
	root       string // the repository
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{kubeconfig: os.Getenv("KUBECONFIG"), dns: os.Getenv("RAFTKA_E2E_DNS"), containerd: os.Getenv("RAFTKA_E2E_CONTAINERD")}
	if e.kubeconfig == "" || e.dns == "" || e.containerd == "" {
		t.Skip("needs the e2e cluster: run make test-e2e")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	e.root = root
	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, raftkav1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	if e.kube, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	return e
}

// run runs a command from the repository root and returns its output.
func (e *env) run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = e.root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// kafka returns a franz-go client that reaches the brokers' pods from the
// node: names the brokers advertise (name.namespace.svc) are looked up in the
// cluster's DNS, as a pod's resolver would.
func (e *env) kafka(t *testing.T, bootstrap string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.Dialer(e.dial),
		kgo.MetadataMinAge(500 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// dial connects to a pod's address from the node, looking names up in
// the cluster's DNS.
func (e *env) dial(ctx context.Context, network, address string) (net.Conn, error) {
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, e.dns)
	}}
	dialer := &net.Dialer{Timeout: 5 * time.Second, Resolver: resolver}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(host, ".svc") {
		host += ".cluster.local"
	}
	return dialer.DialContext(ctx, network, net.JoinHostPort(host, port))
}

// eventually polls check every interval until it reports done, failing t
// with the last state it described after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, state := check()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s; last state: %s", what, timeout, state)
		}
		time.Sleep(time.Second)
	}
}

// phase logs how long a step of the test took, as the CI log's timings.
func phase(t *testing.T, name string) func() {
	start := time.Now()
	t.Logf("phase %s: start", name)
	return func() { t.Logf("phase %s: %s", name, time.Since(start).Round(100*time.Millisecond)) }
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// brokerPods lists the pods of a BrokerCluster by their names.
func (e *env) brokerPods(t *testing.T, ns, cluster string) map[string]corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := e.kube.List(ctx(t), &pods, client.InNamespace(ns), client.MatchingLabels{"raftka.io/cluster": cluster}); err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		out[p.Name] = p
	}
	return out
}

func podReady(p corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// describePods is a one-line view of pods for failure messages.
func describePods(pods map[string]corev1.Pod) string {
	var parts []string
	for name, p := range pods {
		restarts := int32(0)
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
		}
		parts = append(parts, fmt.Sprintf("%s phase=%s ready=%v restarts=%d", name, p.Status.Phase, podReady(p), restarts))
	}
	return strings.Join(parts, "; ")
}

func deploymentReplicas(t *testing.T, e *env, ns, name string) (spec, ready int32) {
	t.Helper()
	var d appsv1.Deployment
	if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Replicas != nil {
		spec = *d.Spec.Replicas
	}
	return spec, d.Status.ReadyReplicas
}
