package controllers

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/certs"
	"github.com/raftka/raftka/internal/specs"
)

// mtlsListener is the test's stand-in for a listener with tls
// authentication: the brokers serve a certificate of serverCA for
// localhost and take client certificates of the clients CA.
type mtlsListener struct {
	serverCA, clientsCA certs.Pair
}

func (m mtlsListener) clientOf(t *testing.T, cl *brokertest.Cluster, cert certs.Pair) *kgo.Client {
	t.Helper()
	pair, err := tls.X509KeyPair(cert.Cert, cert.Key)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(m.serverCA.Cert)
	var addrs []string
	for _, b := range cl.Brokers {
		addrs = append(addrs, b.Listeners["MTLS"])
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DialTLSConfig(&tls.Config{RootCAs: roots, ServerName: "localhost", Certificates: []tls.Certificate{pair}}),
		kgo.RequestRetries(0), kgo.RecordRetries(0), kgo.ProduceRequestTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// userCertificate is the certificate in a tls User's Secret, once the
// clients CA signed it for CN=<name>.
func (m mtlsListener) userCertificate(t *testing.T, ns, name string) certs.Pair {
	t.Helper()
	var got certs.Pair
	eventually(t, "the certificate of "+name+" in its Secret", func() (bool, string) {
		var secret corev1.Secret
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &secret); err != nil {
			return false, err.Error()
		}
		got = certs.Pair{Cert: secret.Data[specs.UserSecretCertificate], Key: secret.Data[specs.UserSecretKey]}
		ok, why := certs.UsableClient(got, m.clientsCA.Cert, name, time.Now())
		if ok && string(secret.Data[specs.UserSecretCA]) != string(m.clientsCA.Cert) {
			ok, why = false, "ca.crt is not the clients CA"
		}
		// The key store, for Java clients, holds the same certificate
		// under the password beside it: kept as it is.
		if ks, err := certs.EnsureKeyStore(specs.UserKeyStore(secret.Data), got, m.clientsCA.Cert); ok && (err != nil || !bytes.Equal(ks.Data, secret.Data[specs.UserSecretKeyStore])) {
			ok, why = false, fmt.Sprintf("user.p12 does not hold user.crt under user.password (%v)", err)
		}
		return ok, why
	})
	return got
}

// TestTLSUserCertificate: a tls User gets a certificate of the cluster's
// clients CA for CN=<name>, which authenticates it on a listener with tls
// authentication, where its ACLs (of User:CN=<name>) are enforced; a
// certificate of another CA for the same name is refused; a certificate
// tampered with in the Secret is issued again; a User moved from SCRAM to
// certificates loses its password and keeps its ACLs and quotas under its
// new principal; a deleted User's certificate, valid until it expires,
// keeps no ACL.
func TestTLSUserCertificate(t *testing.T) {
	ns := newNamespace(t)
	now := time.Now()
	clientsCA, err := certs.NewCA("test clients CA", now)
	if err != nil {
		t.Fatal(err)
	}
	serverCA, _ := certs.NewCA("test server CA", now)
	server, err := certs.IssuePeer(serverCA, []string{"localhost"}, now)
	if err != nil {
		t.Fatal(err)
	}
	m := mtlsListener{serverCA: serverCA, clientsCA: clientsCA}
	dir := t.TempDir()
	for file, data := range map[string][]byte{"tls.crt": server.Cert, "tls.key": server.Key, "ca.crt": clientsCA.Cert} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Written first, as the internal credentials are: the operator keeps
	// the clients CA it finds, which the brokers here already trust.
	mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: specs.ClientsCASecretName(&raftkav1.BrokerCluster{ObjectMeta: metav1.ObjectMeta{Name: "mtls"}})},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: clientsCA.Cert, corev1.TLSPrivateKeyKey: clientsCA.Key}})
	cl := startSecuredWith(t, ns, "mtls", func(o *brokertest.Options) {
		o.Listeners = append(o.Listeners, brokertest.Listener{Name: "MTLS", Protocol: "SSL"})
		o.ExtraFlags = append(o.ExtraFlags, "--listener-ssl-dirs", "MTLS="+dir, "--listener-ssl-client-auth", "MTLS=required")
	}, func(c *raftkav1.BrokerCluster) {
		c.Spec.Listeners = append(c.Spec.Listeners, raftkav1.ListenerSpec{Name: "mtls", Port: 9095,
			TLS: &raftkav1.ListenerTLS{SecretName: "mtls-certificate"}, Authentication: &raftkav1.ListenerAuthentication{Type: raftkav1.AuthenticationTLS}})
	})
	cl.CreateTopic("orders", 1, 3, nil)
	cl.CreateTopic("payments", 1, 3, nil)
	tlsUser := func(name string, acls ...raftkav1.ACLRule) *raftkav1.User {
		return &raftkav1.User{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: raftkav1.UserSpec{ClusterRef: raftkav1.ClusterReference{Name: "mtls"},
				Authentication: raftkav1.UserAuthentication{Type: raftkav1.AuthenticationTLS},
				Authorization:  &raftkav1.UserAuthorization{ACLs: acls}}}
	}
	writeOrders := raftkav1.ACLRule{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceTopic, Name: "orders"}, Operations: []raftkav1.ACLOperation{"Write", "Describe"}}
	idempotent := raftkav1.ACLRule{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceCluster}, Operations: []raftkav1.ACLOperation{"IdempotentWrite"}}
	mustCreate(t, tlsUser("alice", writeOrders, idempotent))
	got := userReadyIs(t, ns, "alice", metav1.ConditionTrue, "InSync")
	if got.Status.Secret != "alice" || got.Status.ACLs != 3 {
		t.Fatalf("status %+v", got.Status)
	}
	var caSecret corev1.Secret
	getObject(t, ns, "mtls-clients-ca", &caSecret)
	if string(caSecret.Data[corev1.TLSCertKey]) != string(clientsCA.Cert) {
		t.Fatal("the operator replaced the clients CA it found")
	}
	aliceCert := m.userCertificate(t, ns, "alice")
	alice := m.clientOf(t, cl, aliceCert)
	if err := produceErr(alice, "orders"); err != nil {
		t.Fatalf("alice producing to orders with her certificate: %v", err)
	}
	if err := produceErr(alice, "payments"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice producing to payments: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if acls := userACLs(t, cl, "User:CN=alice"); len(acls) != 3 {
		t.Fatalf("ACLs of User:CN=alice: %v", acls)
	}

	// Another CA's certificate for the same name: the handshake fails.
	forged, _ := certs.IssueClient(serverCA, "alice", now)
	if err := produceErr(m.clientOf(t, cl, forged), "orders"); err == nil || errors.As(err, new(*kerr.Error)) {
		t.Fatalf("a certificate of another CA: %v, want the connection refused", err)
	}

	// A certificate tampered with in the Secret is issued again from the
	// clients CA at the next resync.
	var secret corev1.Secret
	getObject(t, ns, "alice", &secret)
	secret.Data[specs.UserSecretCertificate], secret.Data[specs.UserSecretKey] = forged.Cert, forged.Key
	if err := k8s.Update(context.Background(), &secret); err != nil {
		t.Fatal(err)
	}
	if renewed := m.userCertificate(t, ns, "alice"); produceErr(m.clientOf(t, cl, renewed), "orders") != nil {
		t.Fatal("the certificate issued again does not work")
	}

	// bob starts with SCRAM, an ACL and a quota, then moves to
	// certificates: his password stops working, his ACLs and quota follow
	// him to User:CN=bob.
	bob := tlsUser("bob", raftkav1.ACLRule{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceTopic, Name: "payments"}, Operations: []raftkav1.ACLOperation{"Write"}}, idempotent)
	bob.Spec.Authentication.Type = raftkav1.AuthenticationSCRAMSHA512
	bob.Spec.Quotas = &raftkav1.UserQuotas{ProducerByteRate: ptr.To[int64](1 << 20)}
	mustCreate(t, bob)
	userReadyIs(t, ns, "bob", metav1.ConditionTrue, "InSync")
	getObject(t, ns, "bob", &secret)
	password := string(secret.Data[specs.UserSecretPassword])
	if err := produceErr(clientOf(t, cl, "bob", password), "payments"); err != nil {
		t.Fatalf("bob producing with his password: %v", err)
	}
	patchUser(t, ns, "bob", func(u *raftkav1.User) { u.Spec.Authentication.Type = raftkav1.AuthenticationTLS })
	bobCert := m.userCertificate(t, ns, "bob")
	eventually(t, "bob's ACLs and quota under User:CN=bob, his password refused", func() (bool, string) {
		old, moved := userACLs(t, cl, "User:bob"), userACLs(t, cl, "User:CN=bob")
		slices.Sort(moved)
		oldQuotas, quotas := userQuotas(t, cl, "bob"), userQuotas(t, cl, "CN=bob")
		_, loginErr := kmsg.NewPtrMetadataRequest().RequestWith(context.Background(), clientOf(t, cl, "bob", password))
		return len(old) == 0 && strings.Join(moved, ", ") == "ALLOW CLUSTER:kafka-cluster LITERAL IDEMPOTENT_WRITE, ALLOW TOPIC:payments LITERAL WRITE" &&
				oldQuotas == "" && quotas == "producer_byte_rate=1048576" && errors.Is(loginErr, kerr.SaslAuthenticationFailed),
			fmt.Sprintf("User:bob %v, User:CN=bob %v, quotas %q and %q, login %v", old, moved, oldQuotas, quotas, loginErr)
	})
	if err := produceErr(m.clientOf(t, cl, bobCert), "payments"); err != nil {
		t.Fatalf("bob producing with his certificate: %v", err)
	}

	// Deleted, alice keeps a certificate that is valid until it expires,
	// and no ACL.
	if err := k8s.Delete(context.Background(), getUser(t, ns, "alice")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the User gone", func() (bool, string) {
		err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "alice"}, &raftkav1.User{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if acls := userACLs(t, cl, "User:CN=alice"); len(acls) != 0 {
		t.Errorf("alice's ACLs outlived her: %v", acls)
	}
	if err := produceErr(m.clientOf(t, cl, aliceCert), "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice producing after her deletion: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

// TestListenerCertificateFromTheClusterCA: a TLS listener without a Secret
// of the user's serves a certificate the operator issues from the
// cluster's CA for the cluster's names, which clients check against the
// CA's certificate alone (the key is not in that Secret); the brokers
// serve it once it is in their listener's directory, with no restart, and
// a certificate for other names is issued again.
func TestListenerCertificateFromTheClusterCA(t *testing.T) {
	ns := newNamespace(t)
	placeholderCA, _ := certs.NewCA("placeholder", time.Now())
	placeholder, err := certs.IssueServer(placeholderCA, []string{"placeholder"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles := func(pair certs.Pair) {
		t.Helper()
		// As the kubelet updates a mounted Secret: each file replaced
		// whole.
		for file, data := range map[string][]byte{"tls.crt": pair.Cert, "tls.key": pair.Key} {
			if err := os.WriteFile(filepath.Join(dir, file+".new"), data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, file+".new"), filepath.Join(dir, file)); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeFiles(placeholder)
	cl := startSecuredWith(t, ns, "issued", func(o *brokertest.Options) {
		o.Listeners = append(o.Listeners, brokertest.Listener{Name: "TLS", Protocol: "SSL"})
		o.ExtraFlags = append(o.ExtraFlags, "--listener-ssl-dirs", "TLS="+dir)
	}, func(c *raftkav1.BrokerCluster) {
		c.Spec.Listeners = append(c.Spec.Listeners, raftkav1.ListenerSpec{Name: "tls", Port: 9095, TLS: &raftkav1.ListenerTLS{}})
	})
	names := []string{"issued." + ns + ".svc", "*.issued-brokers." + ns + ".svc"}
	var caCert, listenerSecret corev1.Secret
	var served certs.Pair
	eventually(t, "the listeners' certificate and the CA's certificate", func() (bool, string) {
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "issued-ca-cert"}, &caCert); err != nil {
			return false, err.Error()
		}
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "issued-listener-tls"}, &listenerSecret); err != nil {
			return false, err.Error()
		}
		served = certs.Pair{Cert: listenerSecret.Data[corev1.TLSCertKey], Key: listenerSecret.Data[corev1.TLSPrivateKeyKey]}
		return certs.Usable(served, caCert.Data["ca.crt"], names, time.Now())
	})
	// The CA's certificate, and as a trust store for Java clients, which
	// stays as it is while the CA does; never the CA's key.
	if len(caCert.Data) != 3 || len(caCert.Data["ca.p12"]) == 0 || len(caCert.Data["ca.password"]) == 0 {
		t.Fatalf("the CA's certificate Secret holds %d keys, want ca.crt, ca.p12 and ca.password", len(caCert.Data))
	}
	trustStore := specs.CATrustStore(caCert.Data)
	if again, err := certs.EnsureTrustStore(trustStore, caCert.Data["ca.crt"]); err != nil || !bytes.Equal(again.Data, trustStore.Data) {
		t.Fatalf("ca.p12 does not hold ca.crt under ca.password (%v)", err)
	}
	eventually(t, "the brokers to mount the listeners' certificate", func() (bool, string) {
		var sts appsv1.StatefulSet
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "issued"}, &sts); err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(sts.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
			return v.Name == "tls-tls" && v.Secret != nil && v.Secret.SecretName == "issued-listener-tls"
		}), fmt.Sprintf("%+v", sts.Spec.Template.Spec.Volumes)
	})

	var later corev1.Secret
	getObject(t, ns, "issued-ca-cert", &later)
	if !bytes.Equal(later.Data["ca.p12"], trustStore.Data) {
		t.Error("the trust store was made again for the same CA")
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caCert.Data["ca.crt"])
	var addrs []string
	for _, b := range cl.Brokers {
		addrs = append(addrs, b.Listeners["TLS"])
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DialTLSConfig(&tls.Config{RootCAs: roots, ServerName: "issued." + ns + ".svc"}), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	metadata := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, client)
		return err
	}
	if err := metadata(); err == nil {
		t.Fatal("the placeholder certificate passed the cluster CA's check")
	}
	writeFiles(served)
	eventually(t, "the brokers serving the operator's certificate", func() (bool, string) {
		err := metadata()
		return err == nil, fmt.Sprint(err)
	})

	// Another CA's certificate in the Secret is issued again.
	listenerSecret.Data[corev1.TLSCertKey], listenerSecret.Data[corev1.TLSPrivateKeyKey] = placeholder.Cert, placeholder.Key
	if err := k8s.Update(context.Background(), &listenerSecret); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the listeners' certificate issued again", func() (bool, string) {
		var renewed corev1.Secret
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "issued-listener-tls"}, &renewed); err != nil {
			return false, err.Error()
		}
		return certs.Usable(certs.Pair{Cert: renewed.Data[corev1.TLSCertKey], Key: renewed.Data[corev1.TLSPrivateKeyKey]}, caCert.Data["ca.crt"], names, time.Now())
	})
}
