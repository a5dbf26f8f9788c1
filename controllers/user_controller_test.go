package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/specs"
)

// startSecured starts real brokers as the operator runs those of a
// BrokerCluster with listeners: the brokers and the operator
// authenticate on the inter-broker listener (here the first, standing for
// replication) with the passwords of the internal credentials Secret,
// which the test writes first so that the operator keeps them, and
// clients use a SASL listener, CLIENT; the ACL authorizer is on.
func startSecured(t *testing.T, ns, name string, adjust ...func(*raftkav1.BrokerCluster)) *brokertest.Cluster {
	return startSecuredWith(t, ns, name, func(*brokertest.Options) {}, adjust...)
}

// startSecuredWith is startSecured with the brokers' options adjusted:
// listeners of the cluster's spec beside CLIENT, say.
func startSecuredWith(t *testing.T, ns, name string, brokers func(*brokertest.Options), adjust ...func(*raftkav1.BrokerCluster)) *brokertest.Cluster {
	brokerPassword, operatorPassword := "broker-"+newPassword(), "operator-"+newPassword()
	cluster := &raftkav1.BrokerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: raftkav1.BrokerClusterSpec{Replicas: 3, Image: "raftka/broker:test", Rebalancing: raftkav1.RebalancingOff,
			Storage:       raftkav1.StorageSpec{Size: resource.MustParse("1Gi")},
			Listeners:     []raftkav1.ListenerSpec{{Name: "client", Port: 9094, Authentication: &raftkav1.ListenerAuthentication{Type: raftkav1.AuthenticationSCRAMSHA512}}},
			Authorization: &raftkav1.AuthorizationSpec{Type: "simple"}}}
	for _, f := range adjust {
		f(cluster)
	}
	mustCreate(t, specs.BuildInternalCredentials(cluster, brokerPassword, operatorPassword))
	opts := brokertest.Options{Brokers: 3,
		InterBrokerUser: &brokertest.User{Name: specs.BrokerUser, Password: brokerPassword},
		Users:           []brokertest.User{{Name: specs.OperatorUser, Password: operatorPassword}},
		Listeners:       []brokertest.Listener{{Name: "CLIENT", Protocol: "SASL_PLAINTEXT"}},
		ExtraFlags:      []string{"--authorizer", "acl", "--super-users", "User:" + specs.BrokerUser + ";User:" + specs.OperatorUser}}
	brokers(&opts)
	cl := startBrokers(t, ns, name, opts)
	mustCreate(t, cluster)
	return cl
}

func getUser(t *testing.T, ns, name string) *raftkav1.User {
	t.Helper()
	var u raftkav1.User
	getObject(t, ns, name, &u)
	return &u
}

// userReadyIs waits for the User's Ready condition to have this status
// and reason.
func userReadyIs(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string) *raftkav1.User {
	t.Helper()
	var got raftkav1.User
	readyConditionIs(t, ns, name, &got, func() []metav1.Condition { return got.Status.Conditions }, status, reason)
	return &got
}

// clientOf is a client of the CLIENT listener authenticated as user.
func clientOf(t *testing.T, cl *brokertest.Cluster, user, password string) *kgo.Client {
	t.Helper()
	var addrs []string
	for _, b := range cl.Brokers {
		addrs = append(addrs, b.Listeners["CLIENT"])
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()),
		kgo.RequestRetries(0), kgo.RecordRetries(0), kgo.ProduceRequestTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// produceErr is the error of producing one record as the client: nil,
// TOPIC_AUTHORIZATION_FAILED, or an authentication failure.
func produceErr(c *kgo.Client, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

// userACLs are the ACL bindings of a principal on the brokers, as text.
func userACLs(t *testing.T, cl *brokertest.Cluster, principal string) []string {
	t.Helper()
	results, err := cl.Admin().DescribeACLs(context.Background(), kadm.NewACLs().Topics().Groups().Clusters().TransactionalIDs().
		ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow(principal).Deny(principal).AllowHosts().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range results {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		for _, d := range r.Described {
			out = append(out, fmt.Sprintf("%s %s:%s %s %s", d.Permission, d.Type, d.Name, d.Pattern, d.Operation))
		}
	}
	return out
}

// TestUserCredentialAndACLs: a User's password is generated into its
// Secret and works on the brokers; its ACLs are enforced with Kafka's
// error codes; a password or ACL changed on the brokers is set back; a
// changed spec changes what the user may do; deleting the User revokes
// its access.
func TestUserCredentialAndACLs(t *testing.T) {
	ns := newNamespace(t)
	cl := startSecured(t, ns, "secured")
	cl.CreateTopic("orders", 1, 3, nil)
	cl.CreateTopic("payments", 1, 3, nil)
	user := &raftkav1.User{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice"},
		Spec: raftkav1.UserSpec{ClusterRef: raftkav1.ClusterReference{Name: "secured"},
			Authentication: raftkav1.UserAuthentication{Type: raftkav1.AuthenticationSCRAMSHA512},
			Authorization: &raftkav1.UserAuthorization{ACLs: []raftkav1.ACLRule{
				{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceTopic, Name: "orders"}, Operations: []raftkav1.ACLOperation{"Write", "Describe"}},
				{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceGroup, Name: "alice-", PatternType: raftkav1.ACLPatternPrefix}, Operations: []raftkav1.ACLOperation{"Read"}},
				{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceCluster}, Operations: []raftkav1.ACLOperation{"IdempotentWrite"}},
			}},
			Quotas: &raftkav1.UserQuotas{ProducerByteRate: ptr.To[int64](1 << 20)}}}
	mustCreate(t, user)
	// The operator reaches the brokers as raftka-operator with the
	// password of the Secret it kept: it reads the metadata quorum.
	eventually(t, "the BrokerCluster to see its brokers through the operator's credential", func() (bool, string) {
		var bc raftkav1.BrokerCluster
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "secured"}, &bc); err != nil {
			return false, err.Error()
		}
		voters := 0
		for _, b := range bc.Status.Brokers {
			if b.MetadataVoter {
				voters++
			}
		}
		return voters == 3 && len(bc.Status.Listeners) == 1 && bc.Status.Listeners[0].BootstrapServers == "secured."+ns+".svc:9094",
			fmt.Sprintf("%+v", bc.Status)
	})
	got := userReadyIs(t, ns, "alice", metav1.ConditionTrue, "InSync")
	if got.Status.ACLs != 4 || got.Status.Secret != "alice" || got.Status.UserName != "alice" {
		t.Fatalf("status %+v", got.Status)
	}
	// No listener of this cluster takes certificates: a tls User says so.
	mustCreate(t, &raftkav1.User{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "carol"},
		Spec: raftkav1.UserSpec{ClusterRef: raftkav1.ClusterReference{Name: "secured"}, Authentication: raftkav1.UserAuthentication{Type: raftkav1.AuthenticationTLS}}})
	userReadyIs(t, ns, "carol", metav1.ConditionFalse, raftkav1.ReasonClusterNotSecured)
	var secret corev1.Secret
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "alice"}, &secret); err != nil {
		t.Fatal(err)
	}
	password := string(secret.Data[specs.UserSecretPassword])
	if len(password) < 20 || string(secret.Data[specs.UserSecretUsername]) != "alice" ||
		!strings.Contains(string(secret.Data[specs.UserSecretJAASConfig]), `ScramLoginModule required username="alice" password="`+password+`";`) {
		t.Fatalf("secret data %q", secret.Data)
	}
	if !metav1.IsControlledBy(&secret, got) {
		t.Fatal("the Secret is not owned by its User: it would outlive it")
	}
	alice := clientOf(t, cl, "alice", password)
	if err := produceErr(alice, "orders"); err != nil {
		t.Fatalf("alice producing to orders: %v", err)
	}
	if err := produceErr(alice, "payments"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice producing to payments: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	if got := userQuotas(t, cl, "alice"); got != "producer_byte_rate=1048576" {
		t.Fatalf("alice's quotas on the brokers: %s", got)
	}

	// Someone changes alice on the brokers with Kafka's tools: her password,
	// one ACL gone and one added, her quotas. The operator sets all of it
	// back.
	ctx := context.Background()
	alice5 := "alice"
	if _, err := cl.Admin().AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &alice5}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 5}, {Key: "consumer_byte_rate", Value: 5}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "stolen"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().DeleteACLs(ctx, kadm.NewACLs().Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite).Allow("User:alice").AllowHosts()); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateACLs(ctx, kadm.NewACLs().Topics("payments").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite).Allow("User:alice").AllowHosts()); err != nil {
		t.Fatal(err)
	}
	want := "ALLOW CLUSTER:kafka-cluster LITERAL IDEMPOTENT_WRITE, ALLOW GROUP:alice- PREFIXED READ, ALLOW TOPIC:orders LITERAL DESCRIBE, ALLOW TOPIC:orders LITERAL WRITE"
	eventually(t, "alice's password and ACLs set back", func() (bool, string) {
		acls := userACLs(t, cl, "User:alice")
		slices.Sort(acls)
		quotas := userQuotas(t, cl, "alice")
		return strings.Join(acls, ", ") == want && quotas == "producer_byte_rate=1048576" && produceErr(clientOf(t, cl, "alice", password), "orders") == nil,
			strings.Join(acls, ", ") + " " + quotas
	})

	// The spec takes Write away.
	patchUser(t, ns, "alice", func(u *raftkav1.User) { u.Spec.Authorization.ACLs[0].Operations = []raftkav1.ACLOperation{"Describe"} })
	eventually(t, "alice refused on orders", func() (bool, string) {
		err := produceErr(clientOf(t, cl, "alice", password), "orders")
		return errors.Is(err, kerr.TopicAuthorizationFailed), fmt.Sprint(err)
	})

	// Deleted, alice can neither log in nor keep an ACL.
	if err := k8s.Delete(ctx, getUser(t, ns, "alice")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the User gone", func() (bool, string) {
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "alice"}, &raftkav1.User{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if acls := userACLs(t, cl, "User:alice"); len(acls) != 0 {
		t.Errorf("alice's ACLs outlived her: %v", acls)
	}
	if quotas := userQuotas(t, cl, "alice"); quotas != "" {
		t.Errorf("alice's quotas outlived her: %s", quotas)
	}
	md := kmsg.NewPtrMetadataRequest()
	if _, err := md.RequestWith(ctx, clientOf(t, cl, "alice", password)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("alice's login after her deletion: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// TestUserNeedsASecuredCluster: a User of a cluster without listeners of
// its own, whose brokers authenticate no one, says so and stalls.
func TestUserNeedsASecuredCluster(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, brokerCluster(ns))
	mustCreate(t, &raftkav1.User{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bob"},
		Spec: raftkav1.UserSpec{ClusterRef: raftkav1.ClusterReference{Name: "events"}, Authentication: raftkav1.UserAuthentication{Type: raftkav1.AuthenticationSCRAMSHA512}}})
	got := userReadyIs(t, ns, "bob", metav1.ConditionFalse, raftkav1.ReasonClusterNotSecured)
	if c := meta.FindStatusCondition(got.Status.Conditions, raftkav1.ConditionStalled); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Stalled condition %+v", c)
	}
	// The cluster's own users are not a User's to manage.
	mustCreate(t, &raftkav1.User{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "impostor"},
		Spec: raftkav1.UserSpec{ClusterRef: raftkav1.ClusterReference{Name: "events"}, UserName: specs.OperatorUser,
			Authentication: raftkav1.UserAuthentication{Type: raftkav1.AuthenticationSCRAMSHA512}}})
	userReadyIs(t, ns, "impostor", metav1.ConditionFalse, raftkav1.ReasonNotSupported)
}

// userQuotas are the quota values of user=<name> on the brokers, as text.
func userQuotas(t *testing.T, cl *brokertest.Cluster, name string) string {
	t.Helper()
	described, err := cl.Admin().DescribeClientQuotas(context.Background(), true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: &name}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range described {
		for _, v := range d.Values {
			out = append(out, fmt.Sprintf("%s=%.0f", v.Key, v.Value))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

func patchUser(t *testing.T, ns, name string, change func(*raftkav1.User)) {
	t.Helper()
	for try := 0; ; try++ {
		u := getUser(t, ns, name)
		change(u)
		err := k8s.Update(context.Background(), u)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || try > 20 {
			t.Fatal(err)
		}
	}
}
