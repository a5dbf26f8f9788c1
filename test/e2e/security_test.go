//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/broker/brokertest"
)

const securedName = "secured"

// testSecurity runs a BrokerCluster whose clients authenticate and are
// authorized: its pods mount the operator's generated credentials and a
// TLS listener's certificate from a Secret; the operator administers it
// as its own super user; a User's generated password works over TLS and
// SCRAM, only for what its ACLs allow; a tls User's certificate, from the
// clients CA the pods mount, works on a listener with tls authentication,
// for a test client and for the example consumer in a pod.
func testSecurity(t *testing.T, e *env) {
	ca := brokertest.NewCA(t)
	cert, key := ca.IssueServer(t, 2, securedName+"."+namespace+".svc", "*."+securedName+"-brokers."+namespace+".svc")
	scramOnly := &raftkav1.ListenerAuthentication{Type: raftkav1.AuthenticationSCRAMSHA512}
	objects := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: securedName + "-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}},
		&raftkav1.BrokerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: securedName},
			// Two brokers: their Raft transport is mutual TLS, with the
			// certificate the operator issued for their DNS names.
			Spec: raftkav1.BrokerClusterSpec{Replicas: 2, Storage: raftkav1.StorageSpec{Size: resource.MustParse("1Gi")},
				Listeners: []raftkav1.ListenerSpec{{Name: "internal", Port: 9092, Authentication: scramOnly},
					{Name: "tls", Port: 9094, TLS: &raftkav1.ListenerTLS{SecretName: securedName + "-tls"}, Authentication: scramOnly},
					// The operator's certificate, naming the node's address.
					{Name: "outside", Port: 9096, Type: raftkav1.ListenerNodePort, TLS: &raftkav1.ListenerTLS{}, Authentication: scramOnly},
					// The operator's certificate, from the cluster's CA.
					{Name: "mtls", Port: 9095, TLS: &raftkav1.ListenerTLS{}, Authentication: &raftkav1.ListenerAuthentication{Type: raftkav1.AuthenticationTLS}}},
				Authorization: &raftkav1.AuthorizationSpec{Type: "simple"},
				// The e2e node's bridge network does not enforce it; the API
				// server takes it and the operator writes it.
				NetworkPolicy: &raftkav1.NetworkPolicySpec{Enabled: true}}},
		secureTopic("secured-orders"), secureTopic("secured-audit"),
		&raftkav1.User{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "orders-app"},
			Spec: raftkav1.UserSpec{ClusterRef: raftkav1.ClusterReference{Name: securedName},
				Authentication: raftkav1.UserAuthentication{Type: raftkav1.AuthenticationSCRAMSHA512},
				Authorization: &raftkav1.UserAuthorization{ACLs: []raftkav1.ACLRule{
					{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceTopic, Name: "secured-orders"}, Operations: []raftkav1.ACLOperation{"Write", "Describe"}},
					{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceCluster}, Operations: []raftkav1.ACLOperation{"IdempotentWrite"}},
				}}}},
		&raftkav1.User{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "audit-app"},
			Spec: raftkav1.UserSpec{ClusterRef: raftkav1.ClusterReference{Name: securedName},
				Authentication: raftkav1.UserAuthentication{Type: raftkav1.AuthenticationTLS},
				Authorization: &raftkav1.UserAuthorization{ACLs: []raftkav1.ACLRule{
					{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceTopic, Name: "secured-audit"}, Operations: []raftkav1.ACLOperation{"Write", "Describe", "Read"}},
					{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceGroup, Name: "audit-", PatternType: raftkav1.ACLPatternPrefix}, Operations: []raftkav1.ACLOperation{"Read"}},
					{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceCluster}, Operations: []raftkav1.ACLOperation{"IdempotentWrite"}},
				}}}},
	}
	for _, obj := range objects {
		if err := e.kube.Create(ctx(t), obj); err != nil {
			t.Fatal(err)
		}
	}
	// The Topics and the User are made by the operator on the brokers,
	// through the replication listener as raftka-operator.
	waitReady(t, e, &raftkav1.Topic{}, "secured-orders")
	waitReady(t, e, &raftkav1.Topic{}, "secured-audit")
	waitReady(t, e, &raftkav1.User{}, "orders-app")
	waitReady(t, e, &raftkav1.User{}, "audit-app")

	var secret corev1.Secret
	if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: "orders-app"}, &secret); err != nil {
		t.Fatal(err)
	}
	password := string(secret.Data["password"])
	var bc raftkav1.BrokerCluster
	if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: securedName}, &bc); err != nil {
		t.Fatal(err)
	}
	// Clients reach the brokers through Services once their pods are
	// ready (the operator reaches them sooner, through the headless
	// Service); the node port listener's address is known once each
	// broker's pod is on its node.
	eventually(t, 2*time.Minute, "the secured brokers ready, and the node port listener's address in the status", func() (bool, string) {
		if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: securedName}, &bc); err != nil {
			return false, err.Error()
		}
		return bc.Status.ReadyReplicas == 2 && len(bc.Status.Listeners) == 4 && len(strings.Split(bc.Status.Listeners[2].BootstrapServers, ",")) == 2,
			fmt.Sprintf("%d ready, listeners %+v", bc.Status.ReadyReplicas, bc.Status.Listeners)
	})
	if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: securedName + "-brokers"}, &networkingv1.NetworkPolicy{}); err != nil {
		t.Fatalf("the brokers' NetworkPolicy: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	type dialer = func(context.Context, string, string) (net.Conn, error)
	tlsOver := func(dial dialer, roots *x509.CertPool, certificates ...tls.Certificate) dialer {
		return func(ctx context.Context, network, address string) (net.Conn, error) {
			conn, err := dial(ctx, network, address)
			if err != nil {
				return nil, err
			}
			host, _, _ := net.SplitHostPort(address)
			tc := tls.Client(conn, &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12, Certificates: certificates})
			if err := tc.HandshakeContext(ctx); err != nil {
				_ = conn.Close()
				return nil, err
			}
			return tc, nil
		}
	}
	tlsDialWith := func(roots *x509.CertPool, certificates ...tls.Certificate) dialer {
		return tlsOver(e.dial, roots, certificates...)
	}
	tlsDial := tlsDialWith(roots)
	as := func(bootstrap, pass string, dial func(context.Context, string, string) (net.Conn, error)) *kgo.Client {
		return e.kafka(t, bootstrap, kgo.Dialer(dial), kgo.SASL(scram.Auth{User: "orders-app", Pass: pass}.AsSha512Mechanism()),
			kgo.RequestRetries(2), kgo.RecordRetries(2), kgo.ProduceRequestTimeout(5*time.Second))
	}
	produce := func(cl *kgo.Client, topic string) error {
		pctx, cancel := context.WithTimeout(ctx(t), 30*time.Second)
		defer cancel()
		return cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: []byte("secured")}).FirstErr()
	}
	overTLS := as(bc.Status.Listeners[1].BootstrapServers, password, tlsDial)
	if err := produce(overTLS, "secured-orders"); err != nil {
		t.Fatalf("orders-app over TLS and SCRAM-SHA-512: %v", err)
	}
	if err := produce(overTLS, "secured-audit"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("orders-app producing to secured-audit: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := produce(as(bc.Status.Listeners[0].BootstrapServers, password, e.dial), "secured-orders"); err != nil {
		t.Fatalf("orders-app on the internal listener: %v", err)
	}
	// The operator's listener certificates are checked against the
	// cluster CA's certificate.
	var clusterCA corev1.Secret
	if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: securedName + "-ca-cert"}, &clusterCA); err != nil {
		t.Fatal(err)
	}
	clusterRoots := x509.NewCertPool()
	clusterRoots.AppendCertsFromPEM(clusterCA.Data["ca.crt"])
	// From outside the Kubernetes cluster (this test runs on the node, not
	// in a pod): the node's address and the broker's node port, which the
	// broker advertises to that listener's clients, over TLS for that
	// address. The operator certifies it once the broker's pod is on the
	// node, and the broker serves it once the kubelet updates the mounted
	// Secret.
	var outside *kgo.Client
	eventually(t, 3*time.Minute, "orders-app through the node port listener, over TLS for the node's address", func() (bool, string) {
		outside = as(bc.Status.Listeners[2].BootstrapServers, password, tlsOver((&net.Dialer{Timeout: 5 * time.Second}).DialContext, clusterRoots))
		err := produce(outside, "secured-orders")
		return err == nil, fmt.Sprint(err)
	})
	brokers, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx(t), outside)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range brokers.Brokers {
		if addr := net.JoinHostPort(b.Host, fmt.Sprint(b.Port)); !slices.Contains(strings.Split(bc.Status.Listeners[2].BootstrapServers, ","), addr) {
			t.Fatalf("a client of the node port listener is told broker %d is at %s, not one of %s", b.NodeID, addr, bc.Status.Listeners[2].BootstrapServers)
		}
	}
	// audit-app's certificate, from the clients CA the operator made and
	// the pods mount beside the listener's certificate, which the operator
	// issued.
	var auditSecret corev1.Secret
	if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: "audit-app"}, &auditSecret); err != nil {
		t.Fatal(err)
	}
	auditCert, err := tls.X509KeyPair(auditSecret.Data["user.crt"], auditSecret.Data["user.key"])
	if err != nil {
		t.Fatalf("audit-app's certificate: %v", err)
	}
	withCert := e.kafka(t, bc.Status.Listeners[3].BootstrapServers, kgo.Dialer(tlsDialWith(clusterRoots, auditCert)),
		kgo.RequestRetries(2), kgo.RecordRetries(2), kgo.ProduceRequestTimeout(5*time.Second))
	if err := produce(withCert, "secured-audit"); err != nil {
		t.Fatalf("audit-app with its certificate on the mtls listener: %v", err)
	}
	if err := produce(withCert, "secured-orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("audit-app producing to secured-orders: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	withoutCert := e.kafka(t, bc.Status.Listeners[3].BootstrapServers, kgo.Dialer(tlsDialWith(clusterRoots)), kgo.RequestRetries(0))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx(t), withoutCert); err == nil {
		t.Fatal("the mtls listener answered a client without a certificate")
	}
	// The example consumer, in a pod, as audit-app: its certificate and the
	// cluster CA's from the Secrets the operator wrote.
	consumer := auditConsumer(bc.Status.Listeners[3].BootstrapServers)
	if err := e.kube.Create(ctx(t), consumer); err != nil {
		t.Fatal(err)
	}
	auditAdmin := kadm.NewClient(withCert)
	eventually(t, 2*time.Minute, "the example consumer to commit secured-audit's records over mTLS", func() (bool, string) {
		offsets, err := auditAdmin.FetchOffsets(ctx(t), "audit-consumers")
		if err != nil {
			return false, err.Error()
		}
		o, ok := offsets.Lookup("secured-audit", 0)
		return ok && o.At == 1, fmt.Sprintf("%+v", offsets)
	})
	if err := e.kube.Delete(ctx(t), consumer); err != nil {
		t.Fatal(err)
	}
	// The operator made the cluster's CA, the brokers' Raft certificate
	// and the clients CA.
	for _, name := range []string{securedName + "-ca", securedName + "-raft-tls", securedName + "-clients-ca"} {
		if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Secret{}); err != nil {
			t.Fatalf("Secret %s: %v", name, err)
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	if _, err := md.RequestWith(ctx(t), as(bc.Status.Listeners[0].BootstrapServers, "guess", e.dial)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	// The User first, while its brokers run to forget it; then the rest.
	for _, obj := range []client.Object{objects[4], objects[5], objects[2], objects[3], objects[1], objects[0]} {
		if err := e.kube.Delete(ctx(t), obj); err != nil {
			t.Fatal(err)
		}
		if _, isUser := obj.(*raftkav1.User); isUser {
			eventually(t, time.Minute, "the User to be finalized", func() (bool, string) {
				err := e.kube.Get(ctx(t), client.ObjectKeyFromObject(obj), &raftkav1.User{})
				return err != nil, fmt.Sprint(err)
			})
		}
	}
}

// auditConsumer is the example consumer as the tls User audit-app, on the
// mtls listener at bootstrap.
func auditConsumer(bootstrap string) *appsv1.Deployment {
	labels := map[string]string{"app": "audit-consumer"}
	files := []corev1.VolumeProjection{
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "audit-app"},
			Items: []corev1.KeyToPath{{Key: "user.crt", Path: "user.crt"}, {Key: "user.key", Path: "user.key"}}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: securedName + "-ca-cert"},
			Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "audit-consumer", Namespace: namespace},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr.To[int64](5),
				Volumes:                       []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: files}}}},
				Containers: []corev1.Container{{Name: "consumer", Image: consumerImage, ImagePullPolicy: corev1.PullIfNotPresent,
					Env: []corev1.EnvVar{{Name: "BOOTSTRAP_SERVERS", Value: bootstrap}, {Name: "GROUP_ID", Value: "audit-consumers"},
						{Name: "TOPIC", Value: "secured-audit"}, {Name: "SECURITY_PROTOCOL", Value: "SSL"},
						{Name: "SSL_CA_FILE", Value: "/etc/kafka/ca.crt"}, {Name: "SSL_CERTIFICATE_FILE", Value: "/etc/kafka/user.crt"},
						{Name: "SSL_KEY_FILE", Value: "/etc/kafka/user.key"}},
					VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/etc/kafka", ReadOnly: true}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
				}},
			}}}}
}

func secureTopic(name string) *raftkav1.Topic {
	return &raftkav1.Topic{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: raftkav1.TopicSpec{ClusterRef: raftkav1.ClusterReference{Name: securedName}, Partitions: 1, ReplicationFactor: 1}}
}

// waitReady waits for an object's Ready condition to be True.
func waitReady(t *testing.T, e *env, obj client.Object, name string) {
	t.Helper()
	eventually(t, 5*time.Minute, fmt.Sprintf("%T %s Ready", obj, name), func() (bool, string) {
		if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
			return false, err.Error()
		}
		var conds []metav1.Condition
		switch o := obj.(type) {
		case *raftkav1.Topic:
			conds = o.Status.Conditions
		case *raftkav1.User:
			conds = o.Status.Conditions
		}
		c := meta.FindStatusCondition(conds, raftkav1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue, conditions(conds)
	})
}
