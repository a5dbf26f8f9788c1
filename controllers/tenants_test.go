package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

// tenantNamespace makes a test namespace labelled as a tenant, or not.
func tenantNamespace(t *testing.T, tenant bool) string {
	ns := newNamespace(t)
	var n corev1.Namespace
	getObject(t, "", ns, &n)
	if tenant {
		n.Labels = map[string]string{"raftka.io/tenant": "shared"}
		if err := k8s.Update(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

// TestTenantsShareACluster: Topics and Users of namespaces the cluster's
// spec.tenants admits use it, their names under their namespace's prefix;
// a namespace not admitted, a name outside the prefix, and ACLs on another
// tenant's topics are refused with NotAdmitted and change nothing on the
// brokers; a tenant's User cannot touch another tenant's topic, nor take
// another tenant's user name.
func TestTenantsShareACluster(t *testing.T) {
	home := newNamespace(t)
	cl := startSecured(t, home, "shared", func(c *raftkav1.BrokerCluster) {
		c.Spec.Tenants = &raftkav1.TenantsSpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"raftka.io/tenant": "shared"}}}
	})
	a, b, outsider := tenantNamespace(t, true), tenantNamespace(t, true), tenantNamespace(t, false)
	ref := raftkav1.ClusterReference{Name: "shared", Namespace: home}
	topic := func(ns, name, kafkaName string) *raftkav1.Topic {
		tp := topicObject(ns, name, 1)
		tp.Spec.ClusterRef, tp.Spec.TopicName = ref, kafkaName
		return tp
	}
	user := func(ns, name, kafkaName string, aclTopic string) *raftkav1.User {
		return &raftkav1.User{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: raftkav1.UserSpec{ClusterRef: ref, UserName: kafkaName,
				Authentication: raftkav1.UserAuthentication{Type: raftkav1.AuthenticationSCRAMSHA512},
				Authorization: &raftkav1.UserAuthorization{ACLs: []raftkav1.ACLRule{
					{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceTopic, Name: aclTopic, PatternType: raftkav1.ACLPatternPrefix},
						Operations: []raftkav1.ACLOperation{"Write", "Describe"}},
				}}}}
	}
	mustCreate(t, topic(a, "orders", a+".orders"))
	mustCreate(t, topic(b, "payments", b+".payments"))
	mustCreate(t, user(a, "app", a+".app", a+"."))
	readyIs(t, a, "orders", metav1.ConditionTrue, raftkav1.ReasonCreated)
	readyIs(t, b, "payments", metav1.ConditionTrue, raftkav1.ReasonCreated)
	userReadyIs(t, a, "app", metav1.ConditionTrue, "InSync")

	// Refused, and nothing of them reaches the brokers.
	mustCreate(t, topic(a, "unprefixed", "orders"))
	mustCreate(t, topic(outsider, "orders", outsider+".orders"))
	mustCreate(t, user(b, "spy", b+".spy", a+"."))
	mustCreate(t, user(b, "impostor", a+".app", a+"."))
	mustCreate(t, user(outsider, "app", outsider+".app", outsider+"."))
	for _, o := range []struct{ ns, name, want string }{
		{a, "unprefixed", `must start with "` + a + `."`},
		{outsider, "orders", "does not admit namespace " + outsider},
	} {
		got := readyIs(t, o.ns, o.name, metav1.ConditionFalse, raftkav1.ReasonNotAdmitted)
		if c := conditionMessage(got.Status.Conditions); !strings.Contains(c, o.want) {
			t.Errorf("Topic %s/%s: %s, want %q", o.ns, o.name, c, o.want)
		}
	}
	for _, o := range []struct{ ns, name, want string }{
		{b, "spy", "outside the tenant's prefix"},
		{b, "impostor", `must start with "` + b + `."`},
		{outsider, "app", "does not admit namespace " + outsider},
	} {
		got := userReadyIs(t, o.ns, o.name, metav1.ConditionFalse, raftkav1.ReasonNotAdmitted)
		if c := conditionMessage(got.Status.Conditions); !strings.Contains(c, o.want) {
			t.Errorf("User %s/%s: %s, want %q", o.ns, o.name, c, o.want)
		}
	}
	topics, err := cl.Admin().ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("orders") || topics.Has(outsider+".orders") {
		t.Errorf("topics not admitted reached the brokers: %v", topics.Names())
	}
	if acls := userACLs(t, cl, "User:"+b+".spy"); len(acls) != 0 {
		t.Errorf("a User not admitted got ACLs: %v", acls)
	}

	// Tenant a's user writes to its own topic, not to tenant b's; the
	// impostor took neither its name nor its password.
	var secret corev1.Secret
	getObject(t, a, "app", &secret)
	app := clientOf(t, cl, a+".app", string(secret.Data["password"]))
	if err := produceErr(app, a+".orders"); err != nil {
		t.Fatalf("tenant a producing to its topic: %v", err)
	}
	if err := produceErr(app, b+".payments"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("tenant a producing to tenant b's topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if got := getUser(t, a, "app"); conditionReason(got.Status.Conditions) != "InSync" {
		t.Errorf("tenant a's User after the impostor: %s", fmt.Sprint(got.Status.Conditions))
	}

	// A tenant's ConsumerGroup watches (and would scale) only its own
	// topics.
	mustCreate(t, &raftkav1.ConsumerGroup{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "nosy"},
		Spec: raftkav1.ConsumerGroupSpec{ClusterRef: ref, GroupID: a + ".nosy", Topics: []string{b + ".payments"}}})
	eventually(t, "the ConsumerGroup over another tenant's topic refused", func() (bool, string) {
		var cg raftkav1.ConsumerGroup
		getObject(t, a, "nosy", &cg)
		return conditionReason(cg.Status.Conditions) == raftkav1.ReasonNotAdmitted, conditionMessage(cg.Status.Conditions)
	})

	// Dropped from the tenants, namespace a keeps no access.
	var n corev1.Namespace
	getObject(t, "", a, &n)
	n.Labels = nil
	if err := k8s.Update(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	userReadyIs(t, a, "app", metav1.ConditionFalse, raftkav1.ReasonNotAdmitted)
	eventually(t, "tenant a's credential and ACLs revoked", func() (bool, string) {
		md := kmsg.NewPtrMetadataRequest()
		_, err := md.RequestWith(context.Background(), clientOf(t, cl, a+".app", string(secret.Data["password"])))
		acls := userACLs(t, cl, "User:"+a+".app")
		return errors.Is(err, kerr.SaslAuthenticationFailed) && len(acls) == 0, fmt.Sprintf("login: %v, ACLs %v", err, acls)
	})
}

func conditionMessage(cs []metav1.Condition) string {
	for _, c := range cs {
		if c.Type == raftkav1.ConditionReady {
			return c.Message
		}
	}
	return ""
}

func conditionReason(cs []metav1.Condition) string {
	for _, c := range cs {
		if c.Type == raftkav1.ConditionReady {
			return c.Reason
		}
	}
	return ""
}
