package controllers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/tenancy"
)

// installAdmissionPolicies creates the policies and bindings of
// config/admission, the bindings narrowed to namespaces labelled so, so
// that the other tests' tenants meet the controllers alone.
func installAdmissionPolicies(t *testing.T, label string) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "config", "admission", "tenants.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if obj.GetKind() == "ValidatingAdmissionPolicyBinding" {
			selector := map[string]any{"matchLabels": map[string]any{label: "true"}}
			if err := unstructured.SetNestedMap(obj.Object, selector, "spec", "matchResources", "namespaceSelector"); err != nil {
				t.Fatal(err)
			}
		}
		mustCreate(t, &obj)
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), &obj) })
	}
}

// TestTenantAdmissionPolicies: with config/admission installed, the API
// server itself refuses a tenant's Topic, User or ConsumerGroup that the
// controllers would mark NotAdmitted (a namespace the cluster does not
// admit, a name or an ACL outside the tenant's prefix), with the reason
// in the error, and admits the rest; the operator's parameters follow a
// namespace's labels, and are set back when edited by hand.
func TestTenantAdmissionPolicies(t *testing.T) {
	const label = "raftka.io/admission-test"
	installAdmissionPolicies(t, label)
	ctx := context.Background()
	namespace := func(labels map[string]string) string {
		ns := newNamespace(t)
		var n corev1.Namespace
		getObject(t, "", ns, &n)
		n.Labels = labels
		if err := k8s.Update(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return ns
	}
	home := namespace(map[string]string{label: "true"})
	a := namespace(map[string]string{label: "true", "raftka.io/tenant": "admission"})
	outsider := namespace(map[string]string{label: "true"})
	mustCreate(t, &raftkav1.BrokerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "shared"},
		Spec: raftkav1.BrokerClusterSpec{Replicas: 3, Image: "raftka/broker:test", Storage: raftkav1.StorageSpec{Size: resource.MustParse("1Gi")},
			Tenants: &raftkav1.TenantsSpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"raftka.io/tenant": "admission"}}}}})

	ref := raftkav1.ClusterReference{Name: "shared", Namespace: home}
	topic := func(ns, kafkaName string) client.Object {
		tp := topicObject(ns, "t", 1)
		tp.Spec.ClusterRef, tp.Spec.TopicName = ref, kafkaName
		return tp
	}
	user := func(ns, kafkaName string, rule raftkav1.ACLRule) client.Object {
		return &raftkav1.User{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "u"},
			Spec: raftkav1.UserSpec{ClusterRef: ref, UserName: kafkaName,
				Authentication: raftkav1.UserAuthentication{Type: raftkav1.AuthenticationSCRAMSHA512},
				Authorization:  &raftkav1.UserAuthorization{ACLs: []raftkav1.ACLRule{rule}}}}
	}
	topicRule := func(name string) raftkav1.ACLRule {
		return raftkav1.ACLRule{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceTopic, Name: name, PatternType: raftkav1.ACLPatternPrefix},
			Operations: []raftkav1.ACLOperation{"Write"}}
	}
	group := func(ns string, topics ...string) client.Object {
		return &raftkav1.ConsumerGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g"},
			Spec: raftkav1.ConsumerGroupSpec{ClusterRef: ref, GroupID: ns + ".workers", Topics: topics}}
	}
	elsewhere := topic(outsider, "orders").(*raftkav1.Topic)
	elsewhere.Spec.ClusterRef.Name = "not-this-operators"

	// Dry runs: admission decides, and nothing is left for the
	// controllers.
	admitted := func(obj client.Object) error {
		return k8s.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
	}
	cases := []struct {
		what string
		obj  client.Object
		want string // empty: admitted
	}{
		{"a tenant's topic under its prefix", topic(a, a+".orders"), ""},
		{"a tenant's topic outside its prefix", topic(a, "orders"), `the topic name of namespace ` + a + ` must start with "` + a + `."`},
		{"a topic of a namespace not admitted", topic(outsider, outsider+".orders"), "does not admit namespace " + outsider},
		{"a topic of the cluster's own namespace", topic(home, "orders"), ""},
		{"a topic naming a cluster the operator does not know", elsewhere, ""},
		{"a tenant's user", user(a, a+".app", topicRule(a+".")), ""},
		{"a user taking another's name", user(a, "app", topicRule(a+".")), `the user name of namespace ` + a},
		{"a user's ACL on another tenant's topics", user(a, a+".spy", topicRule("b.")), "may name only resources under"},
		{"a user administering the cluster", user(a, a+".admin", raftkav1.ACLRule{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceCluster},
			Operations: []raftkav1.ACLOperation{"Alter"}}), "may name only resources under"},
		{"a user of a namespace not admitted", user(outsider, outsider+".app", topicRule(outsider+".")), "does not admit namespace " + outsider},
		{"a tenant's group over its topics", group(a, a+".orders"), ""},
		{"a tenant's group over another's topic", group(a, a+".orders", "b.payments"), "the group and its topics of namespace " + a},
	}
	eventually(t, "the tenant admission policies in force", func() (bool, string) {
		for _, c := range cases {
			err := admitted(c.obj)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				return false, fmt.Sprintf("%s: %v, want %q", c.what, err, c.want)
			}
		}
		return true, ""
	})
	// A namespace dropped from the tenants has its objects refused.
	var n corev1.Namespace
	getObject(t, "", a, &n)
	delete(n.Labels, "raftka.io/tenant")
	if err := k8s.Update(ctx, &n); err != nil {
		t.Fatal(err)
	}
	eventually(t, "namespace "+a+" refused once dropped", func() (bool, string) {
		err := admitted(topic(a, a+".orders"))
		return err != nil && strings.Contains(err.Error(), "does not admit namespace "+a), fmt.Sprint(err)
	})

	// The parameters edited by hand are set back.
	key := types.NamespacedName{Namespace: "raftka-system", Name: tenancy.AdmissionConfigMap}
	var cm corev1.ConfigMap
	if err := k8s.Get(ctx, key, &cm); err != nil {
		t.Fatal(err)
	}
	forged := outsider + "_" + home + "_shared"
	cm.Data[forged] = ""
	if err := k8s.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the forged parameter removed", func() (bool, string) {
		var cm corev1.ConfigMap
		if err := k8s.Get(ctx, key, &cm); err != nil {
			return false, err.Error()
		}
		_, ok := cm.Data[forged]
		return !ok, fmt.Sprint(cm.Data)
	})
}
