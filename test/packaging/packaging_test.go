package packaging

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// apiServer starts envtest without CRDs (the installs bring them) and
// returns a client and a kubeconfig file for the binaries.
func apiServer(t *testing.T) (client.Client, string) {
	t.Helper()
	if testing.Short() || os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("needs KUBEBUILDER_ASSETS (make test sets it)")
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "installer", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, path
}

func repoRoot(t *testing.T) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func mustExist(t *testing.T, c client.Client, gvk schema.GroupVersionKind, ns, name string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatalf("%s %s/%s: %v", gvk.Kind, ns, name, err)
	}
}

var (
	brokerClusterGVK = schema.GroupVersionKind{Group: "raftka.io", Version: "v1alpha1", Kind: "BrokerCluster"}
	topicGVK         = schema.GroupVersionKind{Group: "raftka.io", Version: "v1alpha1", Kind: "Topic"}
	consumerGroupGVK = schema.GroupVersionKind{Group: "raftka.io", Version: "v1alpha1", Kind: "ConsumerGroup"}
	userGVK          = schema.GroupVersionKind{Group: "raftka.io", Version: "v1alpha1", Kind: "User"}
	clusterRoleGVK   = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	// The operator's rights: cluster-wide, or in the watched namespaces.
	clusterRoleBindingGVK = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}
	roleBindingGVK        = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}
	// The tenant admission policies (config/admission).
	policyGVK        = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}
	policyBindingGVK = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"}
)

func TestKustomizeDefaultAndSamplesAreAccepted(t *testing.T) {
	c, kubeconfig := apiServer(t)
	root := repoRoot(t)
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	run(t, root, kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "-k", "config/default")
	run(t, root, kubectl, "--kubeconfig", kubeconfig, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/brokerclusters.raftka.io", "crd/topics.raftka.io", "crd/consumergroups.raftka.io", "crd/users.raftka.io")
	run(t, root, kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "-n", "default", "-k", "config/samples")
	run(t, root, kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "-n", "default", "-k", "config/samples/secured")

	var d appsv1.Deployment
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "raftka-system", Name: "raftka-operator"}, &d); err != nil {
		t.Fatalf("operator Deployment: %v", err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "raftka/operator:v0.1.0" {
		t.Fatalf("operator image %s", img)
	}
	mustExist(t, c, clusterRoleGVK, "", "raftka-operator")
	mustExist(t, c, brokerClusterGVK, "default", "events")
	mustExist(t, c, topicGVK, "default", "orders")
	mustExist(t, c, topicGVK, "default", "audit-log")
	mustExist(t, c, consumerGroupGVK, "default", "order-processors")
	mustExist(t, c, brokerClusterGVK, "default", "secured")
	mustExist(t, c, userGVK, "default", "orders-app")
	for _, kind := range []string{"topics", "users", "consumergroups"} {
		mustExist(t, c, policyGVK, "", "raftka-tenant-"+kind)
		mustHaveParams(t, c, "raftka-tenant-"+kind, "raftka-system")
	}
}

// mustHaveParams: a tenant admission binding reads the operator's
// ConfigMap in its namespace.
func mustHaveParams(t *testing.T, c client.Client, binding, ns string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(policyBindingGVK)
	if err := c.Get(context.Background(), types.NamespacedName{Name: binding}, obj); err != nil {
		t.Fatalf("binding %s: %v", binding, err)
	}
	ref, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "paramRef")
	if ref["name"] != "raftka-tenants" || ref["namespace"] != ns || ref["parameterNotFoundAction"] != "Allow" {
		t.Fatalf("binding %s: paramRef %v", binding, ref)
	}
}

func TestHelmInstall(t *testing.T) {
	c, kubeconfig := apiServer(t)
	root := repoRoot(t)
	helm := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("no %s: make test installs it", helm)
	}
	out := run(t, root, helm, "--kubeconfig", kubeconfig, "install", "rk", "charts/raftka", "--namespace", "raftka-system",
		"--create-namespace", "--set", "brokerCluster.enabled=true")
	if !strings.Contains(out, "STATUS: deployed") || !strings.Contains(out, "BrokerCluster \"events\"") {
		t.Fatalf("helm install output:\n%s", out)
	}
	var d appsv1.Deployment
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "raftka-system", Name: "rk-operator"}, &d); err != nil {
		t.Fatalf("operator Deployment: %v", err)
	}
	args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--leader-elect=true") {
		t.Fatalf("operator args %s", args)
	}
	mustExist(t, c, clusterRoleGVK, "", "rk-operator")
	mustExist(t, c, brokerClusterGVK, "raftka-system", "events")
	mustExist(t, c, clusterRoleBindingGVK, "", "rk-operator")
	for _, kind := range []string{"topics", "users", "consumergroups"} {
		mustExist(t, c, policyGVK, "", "rk-tenant-"+kind)
		mustHaveParams(t, c, "rk-tenant-"+kind, "raftka-system")
	}
	// The chart's CRDs are config/crd/bases byte for byte.
	for _, name := range []string{"raftka.io_brokerclusters.yaml", "raftka.io_topics.yaml", "raftka.io_consumergroups.yaml", "raftka.io_users.yaml"} {
		a, _ := os.ReadFile(filepath.Join(root, "config", "crd", "bases", name))
		b, _ := os.ReadFile(filepath.Join(root, "charts", "raftka", "crds", name))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Fatalf("charts/raftka/crds/%s differs from config/crd/bases", name)
		}
	}
}

// TestHelmInstallWatchingNamespaces: an operator that watches some
// namespaces has its rights, Secrets among them, in those namespaces
// only.
func TestHelmInstallWatchingNamespaces(t *testing.T) {
	c, kubeconfig := apiServer(t)
	root := repoRoot(t)
	helm := filepath.Join(root, "bin", "helm")
	for _, ns := range []string{"team-a", "team-b"} {
		if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	run(t, root, helm, "--kubeconfig", kubeconfig, "install", "scoped", "charts/raftka", "--namespace", "raftka-system",
		"--create-namespace", "--set", "watchNamespaces={team-a,team-b}")
	mustExist(t, c, roleBindingGVK, "team-a", "scoped-operator")
	mustExist(t, c, roleBindingGVK, "team-b", "scoped-operator")
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(clusterRoleBindingGVK)
	if err := c.Get(context.Background(), types.NamespacedName{Name: "scoped-operator"}, u); !apierrors.IsNotFound(err) {
		t.Fatalf("an operator watching two namespaces is bound cluster-wide: %v", err)
	}
	// Nor has it tenants, whose admission needs every namespace.
	u.SetGroupVersionKind(policyGVK)
	if err := c.Get(context.Background(), types.NamespacedName{Name: "scoped-tenant-topics"}, u); !apierrors.IsNotFound(err) {
		t.Fatalf("an operator watching two namespaces installs tenant admission: %v", err)
	}
}
