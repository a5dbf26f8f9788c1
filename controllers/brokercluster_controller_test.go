package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/certs"
	"github.com/raftka/raftka/internal/specs"
)

func TestBrokerClusterOwnsItsObjects(t *testing.T) {
	ns := newNamespace(t)
	c := brokerCluster(ns)
	c.Spec.Config = map[string]string{"log-level": "debug"}
	mustCreate(t, c)
	ctx := context.Background()
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	var sts appsv1.StatefulSet
	eventually(t, "the StatefulSet", func() (bool, string) { return k8s.Get(ctx, key("events"), &sts) == nil, "" })
	if *sts.Spec.Replicas != 3 || len(sts.OwnerReferences) != 1 || sts.OwnerReferences[0].Name != "events" {
		t.Fatalf("statefulset replicas %d owners %v", *sts.Spec.Replicas, sts.OwnerReferences)
	}
	for _, obj := range []client.Object{&corev1.Service{}, &corev1.ConfigMap{}, &policyv1.PodDisruptionBudget{}} {
		name := map[string]string{"*v1.Service": "events-brokers", "*v1.ConfigMap": "events-config", "*v1.PodDisruptionBudget": "events"}[typeName(obj)]
		if err := k8s.Get(ctx, key(name), obj); err != nil {
			t.Fatalf("%s %s: %v", typeName(obj), name, err)
		}
		if len(obj.GetOwnerReferences()) != 1 {
			t.Fatalf("%s %s has no owner reference", typeName(obj), name)
		}
	}
	var cm corev1.ConfigMap
	_ = k8s.Get(ctx, key("events-config"), &cm)
	if cm.Data["RAFTKA_LOG_LEVEL"] != "debug" {
		t.Fatalf("config map %v", cm.Data)
	}
	eventually(t, "status", func() (bool, string) {
		var got raftkav1.BrokerCluster
		_ = k8s.Get(ctx, key("events"), &got)
		ready := meta.FindStatusCondition(got.Status.Conditions, raftkav1.ConditionReady)
		// envtest runs no pods: the brokers never become ready.
		return got.Status.BootstrapServers == specs.BootstrapServers(&got) && ready != nil && ready.Status == metav1.ConditionFalse &&
			ready.Reason == "BrokersNotReady" && got.Status.ObservedGeneration == got.Generation, ""
	})

	// The user's spec is not rewritten with defaults.
	var got raftkav1.BrokerCluster
	_ = k8s.Get(ctx, key("events"), &got)
	if got.Spec.ImagePullPolicy != "" || got.Spec.PodTemplate != nil {
		t.Fatalf("the operator wrote into spec: %+v", got.Spec)
	}

	// A config change reaches the ConfigMap and changes the pod template's hash.
	oldHash := sts.Spec.Template.Annotations[specs.AnnotationConfigHash]
	got.Spec.Config["log-level"] = "warn"
	if err := k8s.Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new config hash", func() (bool, string) {
		_ = k8s.Get(ctx, key("events"), &sts)
		return sts.Spec.Template.Annotations[specs.AnnotationConfigHash] != oldHash, ""
	})

	// What the operator sets comes back after a hand edit (server-side
	// apply); what others add stays.
	var svc corev1.Service
	if err := k8s.Get(ctx, key("events-brokers"), &svc); err != nil {
		t.Fatal(err)
	}
	want := svc.Spec.Ports
	svc.Spec.Ports = []corev1.ServicePort{{Name: "other", Port: 1234}}
	svc.Annotations = map[string]string{"example.com/added-by-hand": "yes"}
	if err := k8s.Update(ctx, &svc); err != nil {
		t.Fatal(err)
	}
	_ = k8s.Get(ctx, key("events"), &sts)
	sts.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	if err := k8s.Update(ctx, &sts); err != nil {
		t.Fatal(err)
	}
	eventually(t, "hand edits reverted", func() (bool, string) {
		_ = k8s.Get(ctx, key("events-brokers"), &svc)
		_ = k8s.Get(ctx, key("events"), &sts)
		grace := ptr.Deref(sts.Spec.Template.Spec.TerminationGracePeriodSeconds, 0)
		for _, p := range want {
			if !slices.ContainsFunc(svc.Spec.Ports, func(q corev1.ServicePort) bool { return q.Name == p.Name && q.Port == p.Port }) {
				return false, fmt.Sprintf("ports %v", svc.Spec.Ports)
			}
		}
		return grace != 1 && svc.Annotations["example.com/added-by-hand"] == "yes", fmt.Sprintf("grace %d, annotations %v", grace, svc.Annotations)
	})
}

// Broker 2 of the real cluster hosts partition replicas, so scaling to two
// brokers must wait, and say why.
func TestScaleInWaitsForHostedReplicas(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, brokerCluster(ns))
	mustCreate(t, topicObject(ns, "pinned", 3))
	readyIs(t, ns, "pinned", metav1.ConditionTrue, raftkav1.ReasonCreated)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: ns, Name: "events"}
	var c raftkav1.BrokerCluster
	eventually(t, "the cluster reconciled", func() (bool, string) {
		_ = k8s.Get(ctx, key, &c)
		return c.Status.ObservedGeneration == c.Generation, ""
	})
	c.Spec.Replicas = 2
	if err := k8s.Update(ctx, &c); err != nil {
		t.Fatal(err)
	}
	eventually(t, "ScaleInBlocked", func() (bool, string) {
		_ = k8s.Get(ctx, key, &c)
		p := meta.FindStatusCondition(c.Status.Conditions, raftkav1.ConditionProgressing)
		if p == nil {
			return false, ""
		}
		return p.Reason == "ScaleInBlocked" && contains(p.Message, "broker 2 hosts"), p.Reason + ": " + p.Message
	})
	var sts appsv1.StatefulSet
	_ = k8s.Get(ctx, key, &sts)
	if *sts.Spec.Replicas != 3 {
		t.Fatalf("the StatefulSet was scaled to %d while broker 2 hosts replicas", *sts.Spec.Replicas)
	}
}

func TestInvalidBrokerConfigIsTerminal(t *testing.T) {
	ns := newNamespace(t)
	c := brokerCluster(ns)
	c.Spec.Config = map[string]string{"bogus": "1"}
	mustCreate(t, c)
	eventually(t, "Degraded", func() (bool, string) {
		var got raftkav1.BrokerCluster
		_ = k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "events"}, &got)
		d := meta.FindStatusCondition(got.Status.Conditions, raftkav1.ConditionDegraded)
		return d != nil && d.Status == metav1.ConditionTrue && contains(d.Message, "bogus"), ""
	})
}

func typeName(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Service:
		return "*v1.Service"
	case *corev1.ConfigMap:
		return "*v1.ConfigMap"
	case *policyv1.PodDisruptionBudget:
		return "*v1.PodDisruptionBudget"
	}
	return "?"
}

// The smallest BrokerCluster is its replicas and storage: its brokers run
// the operator's default image, and spec.image stays empty (git owns it).
func TestSmallestBrokerCluster(t *testing.T) {
	ns := newNamespace(t)
	c := &raftkav1.BrokerCluster{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns},
		Spec: raftkav1.BrokerClusterSpec{Replicas: 3, Storage: raftkav1.StorageSpec{Size: resource.MustParse("1Gi")}, Rebalancing: raftkav1.RebalancingOff}}
	mustCreate(t, c)
	key := types.NamespacedName{Namespace: ns, Name: "events"}
	eventually(t, "a StatefulSet running the default image", func() (bool, string) {
		var sts appsv1.StatefulSet
		if err := k8s.Get(context.Background(), key, &sts); err != nil {
			return false, err.Error()
		}
		image := sts.Spec.Template.Spec.Containers[0].Image
		return image == defaultBrokerImage, image
	})
	if err := k8s.Get(context.Background(), key, c); err != nil || c.Spec.Image != "" {
		t.Fatalf("spec.image after reconciling: %q %v, want it left empty", c.Spec.Image, err)
	}
}

// TestNetworkPolicyFollowsTheSpec: enabled, the brokers' NetworkPolicy
// admits the operator's pods to the brokers' own ports, and comes back
// after a hand edit; disabled, it goes.
func TestNetworkPolicyFollowsTheSpec(t *testing.T) {
	ns := newNamespace(t)
	c := brokerCluster(ns)
	c.Spec.NetworkPolicy = &raftkav1.NetworkPolicySpec{Enabled: true}
	mustCreate(t, c)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: ns, Name: specs.NetworkPolicyName(c)}
	var np networkingv1.NetworkPolicy
	admitsOperator := func() (bool, string) {
		if err := k8s.Get(ctx, key, &np); err != nil {
			return false, err.Error()
		}
		if len(np.Spec.Ingress) == 0 || len(np.Spec.Ingress[0].From) != 2 {
			return false, fmt.Sprintf("%+v", np.Spec.Ingress)
		}
		op := np.Spec.Ingress[0].From[1]
		return op.NamespaceSelector != nil && op.NamespaceSelector.MatchLabels[corev1.LabelMetadataName] == "raftka-system" &&
			metav1.IsControlledBy(&np, getCluster(t, ns, "events")), fmt.Sprintf("%+v", op)
	}
	eventually(t, "the NetworkPolicy", admitsOperator)
	np.Spec.Ingress[0].From = np.Spec.Ingress[0].From[:1]
	if err := k8s.Update(ctx, &np); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the operator admitted again after a hand edit", admitsOperator)

	got := getCluster(t, ns, "events")
	got.Spec.NetworkPolicy.Enabled = false
	if err := k8s.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the NetworkPolicy gone", func() (bool, string) {
		err := k8s.Get(ctx, key, &networkingv1.NetworkPolicy{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func getCluster(t *testing.T, ns, name string) *raftkav1.BrokerCluster {
	t.Helper()
	var c raftkav1.BrokerCluster
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestExternalListenersGetAServicePerBroker: a node port listener gets a
// Service per broker, whose allocated port each broker advertises with its
// node's address; a load balancer listener's brokers advertise its address
// once it has one, and the listener certificate the operator issues for
// it names the address, as each becomes known.
func TestExternalListenersGetAServicePerBroker(t *testing.T) {
	ns := newNamespace(t)
	c := brokerCluster(ns)
	c.Spec.Listeners = []raftkav1.ListenerSpec{
		{Name: "internal", Port: 9092},
		{Name: "ext", Port: 9094, Type: raftkav1.ListenerNodePort},
		{Name: "lb", Port: 9095, Type: raftkav1.ListenerLoadBalancer, TLS: &raftkav1.ListenerTLS{}},
	}
	mustCreate(t, specs.BuildInternalCredentials(c, "b", "o"))
	mustCreate(t, c)
	ctx := context.Background()
	nodePorts := map[int32]int32{}
	eventually(t, "a node port Service per broker", func() (bool, string) {
		for id := int32(0); id < 3; id++ {
			var svc corev1.Service
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("events-%d-ext", id)}, &svc); err != nil {
				return false, err.Error()
			}
			nodePorts[id] = svc.Spec.Ports[0].NodePort
		}
		var boot corev1.Service
		return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "events-ext-bootstrap"}, &boot) == nil, "no bootstrap Service"
	})
	var want []string
	for id := int32(0); id < 3; id++ {
		want = append(want, fmt.Sprintf("%d=EXT://$(NODE_IP):%d", id, nodePorts[id]))
	}
	advertisedByID := func() string {
		var sts appsv1.StatefulSet
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "events"}, &sts); err != nil {
			return err.Error()
		}
		for _, a := range sts.Spec.Template.Spec.Containers[0].Args {
			if v, ok := strings.CutPrefix(a, "--advertised-listeners-by-id="); ok {
				return v
			}
		}
		return ""
	}
	eventually(t, "the brokers to advertise their node ports", func() (bool, string) {
		got := advertisedByID()
		return got == strings.Join(want, ";"), got
	})

	certifies := func(names ...string) {
		t.Helper()
		eventually(t, fmt.Sprintf("the listener certificate for %v", names), func() (bool, string) {
			var ca, issued corev1.Secret
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "events-ca"}, &ca); err != nil {
				return false, err.Error()
			}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "events-listener-tls"}, &issued); err != nil {
				return false, err.Error()
			}
			want := append(specs.ListenerHosts(c), names...)
			return certs.Usable(certs.Pair{Cert: issued.Data["tls.crt"], Key: issued.Data["tls.key"]}, ca.Data["tls.crt"], want, time.Now())
		})
	}
	certifies()

	// Load balancers assign broker 1 an address and broker 2 a hostname:
	// they advertise them, and the certificate names them.
	for id, ingress := range map[int]corev1.LoadBalancerIngress{1: {IP: "203.0.113.7"}, 2: {Hostname: "lb-2.example.com"}} {
		var lb corev1.Service
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("events-%d-lb", id)}, &lb); err != nil {
			t.Fatal(err)
		}
		lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{ingress}
		if err := k8s.Status().Update(ctx, &lb); err != nil {
			t.Fatal(err)
		}
	}
	want[1] += ",LB://203.0.113.7:9095"
	want[2] += ",LB://lb-2.example.com:9095"
	eventually(t, "brokers 1 and 2 to advertise their load balancers", func() (bool, string) {
		got := advertisedByID()
		return got == strings.Join(want, ";"), got
	})
	certifies("203.0.113.7", "lb-2.example.com")
}

// TestRaftCertificateIsMadeAndRenewed: a cluster created with listeners of
// its own runs its Raft transport with mutual TLS: the operator makes a CA
// and the brokers' certificate, renews the certificate a month before its
// end (the brokers' pod template changing, so that they restart onto it),
// and a cluster created without listeners keeps its transport as it was.
func TestRaftCertificateIsMadeAndRenewed(t *testing.T) {
	ns := newNamespace(t)
	c := brokerCluster(ns)
	c.Spec.Listeners = []raftkav1.ListenerSpec{{Name: "internal", Port: 9092, Authentication: &raftkav1.ListenerAuthentication{Type: raftkav1.AuthenticationSCRAMSHA512}}}
	mustCreate(t, specs.BuildInternalCredentials(c, "b", "o"))
	mustCreate(t, c)
	ctx := context.Background()
	var peerSecret, caSecret corev1.Secret
	var sts appsv1.StatefulSet
	eventually(t, "the CA, the brokers' certificate and their flags", func() (bool, string) {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "events-raft-tls"}, &peerSecret); err != nil {
			return false, err.Error()
		}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "events-ca"}, &caSecret); err != nil {
			return false, err.Error()
		}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "events"}, &sts); err != nil {
			return false, err.Error()
		}
		return slices.Contains(sts.Spec.Template.Spec.Containers[0].Args, "--raft-tls-ca-file=/etc/raftka/raft-tls/ca.crt"), fmt.Sprint(sts.Spec.Template.Spec.Containers[0].Args)
	})
	ca := certs.Pair{Cert: caSecret.Data["tls.crt"], Key: caSecret.Data["tls.key"]}
	// Every broker's host, and the headless Service the operator dials
	// on the replication listener, which serves the certificate too.
	names := []string{"*.events-brokers." + ns + ".svc", "events-brokers." + ns + ".svc"}
	if ok, why := certs.Usable(certs.Pair{Cert: peerSecret.Data["tls.crt"], Key: peerSecret.Data["tls.key"]}, ca.Cert, names, time.Now()); !ok {
		t.Fatalf("the brokers' certificate: %s", why)
	}
	if string(peerSecret.Data["ca.crt"]) != string(ca.Cert) || !metav1.IsControlledBy(&peerSecret, getCluster(t, ns, "events")) {
		t.Fatal("the brokers' Secret lacks the CA or its owner")
	}
	hash := sts.Spec.Template.Annotations[specs.AnnotationConfigHash]

	// Eleven months on: a certificate a month from its end is renewed.
	old, err := certs.IssuePeer(ca, names, time.Now().Add(-340*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	peerSecret.Data["tls.crt"], peerSecret.Data["tls.key"] = old.Cert, old.Key
	if err := k8s.Update(ctx, &peerSecret); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the certificate renewed and the brokers' template changed", func() (bool, string) {
		var renewed corev1.Secret
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "events-raft-tls"}, &renewed); err != nil {
			return false, err.Error()
		}
		ok, why := certs.Usable(certs.Pair{Cert: renewed.Data["tls.crt"], Key: renewed.Data["tls.key"]}, ca.Cert, names, time.Now())
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "events"}, &sts); err != nil {
			return false, err.Error()
		}
		return ok && sts.Spec.Template.Annotations[specs.AnnotationConfigHash] != hash, why
	})

	// Founded without listeners, a cluster keeps a plain Raft transport
	// when it gains them: brokers of the two kinds could not speak.
	plainNS := newNamespace(t)
	plain := brokerCluster(plainNS)
	mustCreate(t, plain)
	eventually(t, "the plain cluster's StatefulSet", func() (bool, string) {
		return k8s.Get(ctx, types.NamespacedName{Namespace: plainNS, Name: "events"}, &appsv1.StatefulSet{}) == nil, ""
	})
	got := getCluster(t, plainNS, "events")
	got.Spec.Listeners = c.Spec.Listeners
	mustCreate(t, specs.BuildInternalCredentials(got, "b", "o"))
	if err := k8s.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the added listeners in the plain cluster's StatefulSet", func() (bool, string) {
		var s appsv1.StatefulSet
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: plainNS, Name: "events"}, &s); err != nil {
			return false, err.Error()
		}
		args := s.Spec.Template.Spec.Containers[0].Args
		return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--listeners=") }) &&
			!slices.ContainsFunc(args, func(a string) bool {
				return strings.HasPrefix(a, "--raft-tls") || strings.HasPrefix(a, "--inter-broker-ssl-ca-file")
			}), fmt.Sprint(args)
	})
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: plainNS, Name: "events-ca"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a cluster founded without Raft TLS got a CA: %v", err)
	}
}
