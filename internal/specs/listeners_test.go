package specs

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/certs"
)

func securedCluster() *raftkav1.BrokerCluster {
	c := cluster(3)
	c.Spec.Listeners = []raftkav1.ListenerSpec{
		{Name: "internal", Port: 9092, Authentication: &raftkav1.ListenerAuthentication{Type: raftkav1.AuthenticationSCRAMSHA512}},
		{Name: "secure", Port: 9094, TLS: &raftkav1.ListenerTLS{SecretName: "events-tls"}, Authentication: &raftkav1.ListenerAuthentication{Type: raftkav1.AuthenticationSCRAMSHA512}},
		{Name: "tls", Port: 9095, TLS: &raftkav1.ListenerTLS{SecretName: "events-tls"}},
		{Name: "plain", Port: 9096},
	}
	c.Spec.Authorization = &raftkav1.AuthorizationSpec{Type: "simple", SuperUsers: []string{"User:admin"}}
	return c
}

func TestListenersMakeTheBrokersFlags(t *testing.T) {
	sts := BuildStatefulSet(securedCluster(), Founding{Voters: 3}, 3, "abc", nil)
	args := sts.Spec.Template.Spec.Containers[0].Args
	self := "$(POD_NAME).events-brokers.$(POD_NAMESPACE).svc"
	want := map[string]string{
		"--listeners":                      "REPLICATION://0.0.0.0:9091,INTERNAL://0.0.0.0:9092,SECURE://0.0.0.0:9094,TLS://0.0.0.0:9095,PLAIN://0.0.0.0:9096",
		"--advertised-listeners":           fmt.Sprintf("REPLICATION://%[1]s:9091,INTERNAL://%[1]s:9092,SECURE://%[1]s:9094,TLS://%[1]s:9095,PLAIN://%[1]s:9096", self),
		"--listener-security-protocol-map": "REPLICATION:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT,SECURE:SASL_SSL,TLS:SSL,PLAIN:PLAINTEXT",
		"--listener-ssl-dirs":              "SECURE=/etc/raftka/tls/secure,TLS=/etc/raftka/tls/tls",
		"--scram-users-dir":                "/etc/raftka/internal-users",
		"--inter-broker-user":              "raftka-broker",
		"--super-users":                    "User:raftka-broker;User:raftka-operator;User:admin",
		"--authorizer":                     "acl",
		"--listen":                         "",
		"--advertised-address":             "",
	}
	for flag, v := range want {
		if got := arg(args, flag); got != v {
			t.Errorf("%s=%q, want %q", flag, got, v)
		}
	}
	var ports []string
	for _, p := range sts.Spec.Template.Spec.Containers[0].Ports {
		ports = append(ports, fmt.Sprintf("%s:%d", p.Name, p.ContainerPort))
	}
	if got := strings.Join(ports, " "); got != "replication:9091 internal:9092 secure:9094 tls:9095 plain:9096 raft:9093 http:8080" {
		t.Errorf("container ports %s", got)
	}
	// Both TLS listeners name one Secret: each mounts it where its
	// directory says; the internal credentials are mounted once.
	var mounts []string
	for _, m := range sts.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounts = append(mounts, m.Name+"="+m.MountPath)
	}
	if got := strings.Join(mounts, " "); got != "data=/var/lib/raftka internal-users=/etc/raftka/internal-users tls-secure=/etc/raftka/tls/secure tls-tls=/etc/raftka/tls/tls" {
		t.Errorf("mounts %s", got)
	}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Secret == nil {
			t.Errorf("volume %s is not a Secret", v.Name)
		}
	}
}

func TestListenersServicesAndAddresses(t *testing.T) {
	c := securedCluster()
	var headless, clients []string
	for _, p := range BuildHeadlessService(c).Spec.Ports {
		headless = append(headless, p.Name)
	}
	for _, p := range BuildClientService(c).Spec.Ports {
		clients = append(clients, p.Name)
	}
	if got := strings.Join(headless, " "); got != "replication internal secure tls plain raft http" {
		t.Errorf("headless Service ports %s", got)
	}
	// Clients never see the brokers' own listener.
	if got := strings.Join(clients, " "); got != "internal secure tls plain http" {
		t.Errorf("client Service ports %s", got)
	}
	if got := BootstrapServers(c); got != "events.kafka.svc:9092" {
		t.Errorf("bootstrap %s", got)
	}
	if got := OperatorBootstrap(c); got != "events-brokers.kafka.svc:9091" {
		t.Errorf("operator bootstrap %s", got)
	}
	if got := BrokerAddress(c, 2); got != "events-2.events-brokers.kafka.svc:9092" {
		t.Errorf("broker address %s", got)
	}
	plain := cluster(3)
	if OperatorBootstrap(plain) != "events.kafka.svc:9092" || BootstrapServers(plain) != "events.kafka.svc:9092" || Secured(plain) {
		t.Errorf("a cluster without listeners: operator at %s, clients at %s", OperatorBootstrap(plain), BootstrapServers(plain))
	}
	secret := BuildInternalCredentials(c, "b", "o")
	if secret.Name != "events-internal-credentials" || string(secret.Data[BrokerUser]) != "b" || string(secret.Data[OperatorUser]) != "o" {
		t.Errorf("internal credentials %s %q", secret.Name, secret.Data)
	}
}

func TestValidateListeners(t *testing.T) {
	twice := securedCluster()
	twice.Spec.Listeners = append(twice.Spec.Listeners, raftkav1.ListenerSpec{Name: "plain", Port: 9097})
	unsecured := cluster(3)
	unsecured.Spec.Authorization = &raftkav1.AuthorizationSpec{Type: "simple"}
	for name, tc := range map[string]struct {
		c    *raftkav1.BrokerCluster
		want string
	}{
		"valid":                          {securedCluster(), ""},
		"no listeners":                   {cluster(3), ""},
		"a name twice":                   {twice, "listener plain is named twice"},
		"authorization without listener": {unsecured, "authorization needs spec.listeners"},
	} {
		err := ValidateListeners(tc.c)
		if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func TestCertificateAuthenticationMountsTheClientsCA(t *testing.T) {
	c := securedCluster()
	c.Spec.Listeners = append(c.Spec.Listeners, raftkav1.ListenerSpec{Name: "mtls", Port: 9097, TLS: &raftkav1.ListenerTLS{SecretName: "events-tls"},
		Authentication: &raftkav1.ListenerAuthentication{Type: raftkav1.AuthenticationTLS}})
	if !AuthenticatesCertificates(c) || AuthenticatesCertificates(securedCluster()) {
		t.Fatal("AuthenticatesCertificates does not tell a listener with tls authentication")
	}
	sts := BuildStatefulSet(c, Founding{Voters: 3}, 3, "abc", nil)
	args := sts.Spec.Template.Spec.Containers[0].Args
	if got := arg(args, "--listener-ssl-client-auth"); got != "MTLS=required" {
		t.Errorf("--listener-ssl-client-auth=%q: only the listener with tls authentication asks for certificates", got)
	}
	if got := arg(args, "--listener-security-protocol-map"); !strings.HasSuffix(got, ",MTLS:SSL") {
		t.Errorf("--listener-security-protocol-map=%q", got)
	}
	if got := arg(args, "--listener-ssl-dirs"); !strings.HasSuffix(got, ",MTLS=/etc/raftka/tls/mtls") {
		t.Errorf("--listener-ssl-dirs=%q", got)
	}
	// The listener's directory holds its certificate and, as ca.crt, the
	// clients CA's certificate, never its key.
	var files []string
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name != "tls-mtls" {
			continue
		}
		if v.Projected == nil {
			t.Fatalf("volume %+v is not projected", v)
		}
		for _, src := range v.Projected.Sources {
			for _, item := range src.Secret.Items {
				files = append(files, src.Secret.Name+":"+item.Key+"="+item.Path)
			}
		}
	}
	if got := strings.Join(files, " "); got != "events-tls:tls.crt=tls.crt events-tls:tls.key=tls.key events-clients-ca:tls.crt=ca.crt" {
		t.Errorf("the mtls listener's files: %s", got)
	}
}

func TestListenerCertificateOfTheOperator(t *testing.T) {
	c := securedCluster()
	if IssuesListenerCertificate(c) {
		t.Fatal("every TLS listener names its Secret, yet the operator would issue one")
	}
	c.Spec.Listeners = append(c.Spec.Listeners, raftkav1.ListenerSpec{Name: "issued", Port: 9097, TLS: &raftkav1.ListenerTLS{}})
	if !IssuesListenerCertificate(c) {
		t.Fatal("a TLS listener without a Secret gets no certificate")
	}
	if got := ListenerHosts(c); !slices.Equal(got, []string{"events.kafka.svc", "*.events-brokers.kafka.svc"}) {
		t.Errorf("names %v", got)
	}
	// External listeners it certifies add the hosts clients dial; those of
	// a listener with its own Secret, and addresses not known yet, not.
	tls := &raftkav1.ListenerTLS{}
	c.Spec.Listeners = append(c.Spec.Listeners,
		raftkav1.ListenerSpec{Name: "lb", Port: 9098, Type: raftkav1.ListenerLoadBalancer, TLS: tls},
		raftkav1.ListenerSpec{Name: "np", Port: 9099, Type: raftkav1.ListenerNodePort, TLS: tls},
		raftkav1.ListenerSpec{Name: "own", Port: 9100, Type: raftkav1.ListenerLoadBalancer, TLS: &raftkav1.ListenerTLS{SecretName: "mine"}},
		raftkav1.ListenerSpec{Name: "plain", Port: 9101, Type: raftkav1.ListenerNodePort})
	external := ExternalAddresses{
		"lb":    {0: "lb-0.example.com:9098", 1: "192.0.2.11:9098"},
		"np":    {0: "$(NODE_IP):31001", 1: "$(NODE_IP):31002", 2: "$(NODE_IP):31003"},
		"own":   {0: "own.example.com:9100"},
		"plain": {0: "$(NODE_IP):31004"},
	}
	// Brokers 0 and 1 share a node; broker 2's pod has none yet.
	hostIPs := map[int32]string{0: "10.0.0.5", 1: "10.0.0.5"}
	want := []string{"events.kafka.svc", "*.events-brokers.kafka.svc", "10.0.0.5", "192.0.2.11", "lb-0.example.com"}
	if got := ListenerCertificateNames(c, external, hostIPs); !slices.Equal(got, want) {
		t.Errorf("names with external listeners %v, want %v", got, want)
	}
	secrets := map[string]string{}
	for _, v := range BuildStatefulSet(c, Founding{Voters: 3}, 3, "abc", nil).Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
		}
	}
	if secrets["tls-issued"] != "events-listener-tls" || secrets["tls-secure"] != "events-tls" {
		t.Errorf("listener Secrets %v", secrets)
	}
}

func TestTLSUserPrincipalAndSecret(t *testing.T) {
	u := &raftkav1.User{}
	u.Name, u.Namespace = "orders-app", "kafka"
	u.Spec.UserName = "orders"
	u.Spec.Authentication.Type = raftkav1.AuthenticationTLS
	u.Spec.Quotas = &raftkav1.UserQuotas{}
	u.Spec.Authorization = &raftkav1.UserAuthorization{ACLs: []raftkav1.ACLRule{
		{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceTopic, Name: "orders"}, Operations: []raftkav1.ACLOperation{"Write"}}}}
	acls, err := UserACLs(u)
	if err != nil || len(acls) != 1 || acls[0].Principal != "User:CN=orders" {
		t.Fatalf("ACLs %+v %v: want them of User:CN=orders, the certificate's subject", acls, err)
	}
	if got := PrincipalNames(u); !slices.Equal(got, []string{"CN=orders", "orders"}) {
		t.Errorf("principal names %v", got)
	}
	u.Spec.Authentication.Type = raftkav1.AuthenticationSCRAMSHA512
	if got := PrincipalNames(u); !slices.Equal(got, []string{"orders", "CN=orders"}) || Principal(u) != "User:orders" {
		t.Errorf("principal names %v, principal %s", got, Principal(u))
	}
	secret := BuildUserCertificateSecret(u, certs.Pair{Cert: []byte("cert"), Key: []byte("key")}, []byte("ca"), certs.Store{Data: []byte("p12"), Password: "pw"})
	if secret.Name != "orders-app" || string(secret.Data["user.crt"]) != "cert" || string(secret.Data["user.key"]) != "key" ||
		string(secret.Data["ca.crt"]) != "ca" || string(secret.Data["user.p12"]) != "p12" || string(secret.Data["user.password"]) != "pw" || len(secret.Data) != 5 {
		t.Errorf("secret %s %q", secret.Name, secret.Data)
	}
}

func TestUserACLsAndSecret(t *testing.T) {
	u := &raftkav1.User{}
	u.Name, u.Namespace = "orders-app", "kafka"
	u.Spec.ClusterRef.Name = "events"
	u.Spec.UserName = "orders"
	u.Spec.Authorization = &raftkav1.UserAuthorization{ACLs: []raftkav1.ACLRule{
		{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceTopic, Name: "orders-", PatternType: raftkav1.ACLPatternPrefix}, Operations: []raftkav1.ACLOperation{"Read", "Describe"}},
		{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceGroup, Name: "*"}, Operations: []raftkav1.ACLOperation{"Read"}, Host: "10.0.0.1", Type: raftkav1.ACLDeny},
		{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceCluster}, Operations: []raftkav1.ACLOperation{"IdempotentWrite"}},
		{Resource: raftkav1.ACLResource{Type: raftkav1.ACLResourceTransactionalID, Name: "tx"}, Operations: []raftkav1.ACLOperation{"All"}},
	}}
	acls, err := UserACLs(u)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range acls {
		got = append(got, fmt.Sprintf("%s %s %s:%s %s %s %s", a.Principal, a.Permission, a.ResourceType, a.ResourceName, a.PatternType, a.Operation, a.Host))
	}
	want := []string{
		"User:orders ALLOW TOPIC:orders- PREFIXED READ *",
		"User:orders ALLOW TOPIC:orders- PREFIXED DESCRIBE *",
		"User:orders DENY GROUP:* LITERAL READ 10.0.0.1",
		"User:orders ALLOW CLUSTER:kafka-cluster LITERAL IDEMPOTENT_WRITE *",
		"User:orders ALLOW TRANSACTIONAL_ID:tx LITERAL ALL *",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ACLs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	u.Spec.Authorization.ACLs[0].Operations = []raftkav1.ACLOperation{"Any"}
	if _, err := UserACLs(u); err == nil {
		t.Error("the filter-only operation Any made an ACL")
	}
	secret := BuildUserSecret(u, "pw")
	if secret.Name != "orders-app" || string(secret.Data["username"]) != "orders" || string(secret.Data["password"]) != "pw" ||
		string(secret.Data["sasl.jaas.config"]) != `org.apache.kafka.common.security.scram.ScramLoginModule required username="orders" password="pw";` ||
		secret.Type != corev1.SecretTypeOpaque {
		t.Errorf("secret %s %s %q", secret.Name, secret.Type, secret.Data)
	}
}

func TestNetworkPolicyAdmitsOnlyBrokersAndOperatorToTheirOwnPorts(t *testing.T) {
	operator := OperatorPods{Namespace: "raftka-system", Labels: map[string]string{"app.kubernetes.io/name": "raftka-operator"}}
	describe := func(c *raftkav1.BrokerCluster) []string {
		var out []string
		for _, rule := range BuildNetworkPolicy(c, operator).Spec.Ingress {
			var from, ports []string
			for _, p := range rule.From {
				switch {
				case p.NamespaceSelector != nil:
					from = append(from, fmt.Sprintf("ns%v/pods%v", p.NamespaceSelector.MatchLabels, p.PodSelector.MatchLabels))
				case p.PodSelector != nil:
					from = append(from, fmt.Sprintf("pods%v", p.PodSelector.MatchLabels))
				case p.IPBlock != nil:
					from = append(from, "ip "+p.IPBlock.CIDR)
				}
			}
			if rule.From == nil {
				from = []string{"anywhere"}
			}
			for _, p := range rule.Ports {
				ports = append(ports, p.Port.String())
			}
			out = append(out, strings.Join(from, " ")+" -> "+strings.Join(ports, ","))
		}
		return out
	}
	brokers := "pods" + fmt.Sprint(Labels(cluster(3)))
	op := "ns" + fmt.Sprint(map[string]string{"kubernetes.io/metadata.name": "raftka-system"}) + "/pods" + fmt.Sprint(operator.Labels)
	secured := securedCluster()
	secured.Spec.NetworkPolicy = &raftkav1.NetworkPolicySpec{Enabled: true, MetricsFrom: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.1.0.0/16"}}}}
	for name, tc := range map[string]struct {
		c    *raftkav1.BrokerCluster
		want []string
	}{
		"with listeners": {secured, []string{
			brokers + " " + op + " -> replication,raft,http",
			"anywhere -> internal,secure,tls,plain",
			"ip 10.1.0.0/16 -> http",
		}},
		"without listeners": {cluster(3), []string{
			brokers + " " + op + " -> raft,http",
			"anywhere -> kafka",
		}},
	} {
		if got := describe(tc.c); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
	np := BuildNetworkPolicy(secured, operator)
	if fmt.Sprint(np.Spec.PodSelector.MatchLabels) != fmt.Sprint(Labels(secured)) || len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("policy selects %v for %v", np.Spec.PodSelector.MatchLabels, np.Spec.PolicyTypes)
	}
}

func TestExternalListeners(t *testing.T) {
	c := cluster(2)
	c.Spec.Listeners = []raftkav1.ListenerSpec{
		{Name: "internal", Port: 9092},
		{Name: "ext", Port: 9094, Type: raftkav1.ListenerNodePort},
		{Name: "lb", Port: 9095, Type: raftkav1.ListenerLoadBalancer},
	}
	var got []string
	for _, svc := range BuildExternalServices(c, 2) {
		got = append(got, fmt.Sprintf("%s %s %s pod=%s broker=%s policy=%s", svc.Name, svc.Spec.Type, svc.Spec.Ports[0].Name,
			svc.Spec.Selector["statefulset.kubernetes.io/pod-name"], svc.Labels[LabelBroker], svc.Spec.ExternalTrafficPolicy))
	}
	want := []string{
		"events-0-ext NodePort ext pod=events-0 broker=0 policy=Local",
		"events-1-ext NodePort ext pod=events-1 broker=1 policy=Local",
		"events-ext-bootstrap NodePort ext pod= broker= policy=",
		"events-0-lb LoadBalancer lb pod=events-0 broker=0 policy=Local",
		"events-1-lb LoadBalancer lb pod=events-1 broker=1 policy=Local",
		"events-lb-bootstrap LoadBalancer lb pod= broker= policy=",
	}
	if !slices.Equal(got, want) {
		t.Errorf("services\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	nodePort := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "ext", NodePort: 31001}}}}
	if addr, ok := AdvertisedExternal(c.Spec.Listeners[1], nodePort); !ok || addr != "$(NODE_IP):31001" {
		t.Errorf("node port advertises %q %v", addr, ok)
	}
	lb := &corev1.Service{}
	if _, ok := AdvertisedExternal(c.Spec.Listeners[2], lb); ok {
		t.Error("a load balancer without an address advertised one")
	}
	lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "b0.example.com"}}
	if addr, ok := AdvertisedExternal(c.Spec.Listeners[2], lb); !ok || addr != "b0.example.com:9095" {
		t.Errorf("load balancer advertises %q %v", addr, ok)
	}
	if addr, ok := OnNode("$(NODE_IP):31001", "10.0.0.7"); !ok || addr != "10.0.0.7:31001" {
		t.Errorf("on the node: %q %v", addr, ok)
	}
	if _, ok := OnNode("$(NODE_IP):31001", ""); ok {
		t.Error("an address without its node")
	}

	sts := BuildStatefulSet(c, Founding{Voters: 2}, 2, "h", ExternalAddresses{"ext": {0: "$(NODE_IP):31001", 1: "$(NODE_IP):31002"}, "lb": {1: "b1.example.com:9095"}})
	container := sts.Spec.Template.Spec.Containers[0]
	if got := arg(container.Args, "--advertised-listeners-by-id"); got != "0=EXT://$(NODE_IP):31001;1=EXT://$(NODE_IP):31002,LB://b1.example.com:9095" {
		t.Errorf("--advertised-listeners-by-id=%s", got)
	}
	nodeIP := false
	for _, e := range container.Env {
		nodeIP = nodeIP || e.Name == "NODE_IP" && e.ValueFrom.FieldRef.FieldPath == "status.hostIP"
	}
	if !nodeIP {
		t.Error("a node port listener's brokers do not know their node's address")
	}
}

func TestRaftTLSIsFixedAtCreation(t *testing.T) {
	c := securedCluster()
	if f := NewFounding(c); !f.RaftTLS || f.Voters != 3 {
		t.Fatalf("a secured cluster founds with %+v", f)
	}
	if f := NewFounding(cluster(3)); f.RaftTLS {
		t.Fatal("a cluster without listeners founds with a TLS Raft transport")
	}
	// Read back from the ConfigMap: the listeners added or removed since
	// do not switch the transport.
	if f := FoundingOf(cluster(3), BuildConfigMap(c, NewFounding(c))); !f.RaftTLS || f.Voters != 3 {
		t.Errorf("read back %+v", f)
	}
	if f := FoundingOf(c, BuildConfigMap(cluster(1), NewFounding(cluster(1)))); f.RaftTLS || f.Voters != 1 {
		t.Errorf("read back %+v", f)
	}
	sts := BuildStatefulSet(c, Founding{Voters: 3, RaftTLS: true}, 3, "h", nil)
	pod := sts.Spec.Template.Spec
	args := pod.Containers[0].Args
	if arg(args, "--raft-tls-ca-file") != "/etc/raftka/raft-tls/ca.crt" || arg(args, "--raft-tls-cert-file") != "/etc/raftka/raft-tls/tls.crt" ||
		arg(args, "--raft-tls-key-file") != "/etc/raftka/raft-tls/tls.key" {
		t.Errorf("Raft TLS flags in %v", args)
	}
	mounted := false
	for _, v := range pod.Volumes {
		mounted = mounted || v.Secret != nil && v.Secret.SecretName == "events-raft-tls"
	}
	if !mounted {
		t.Error("the Raft certificate's Secret is not mounted")
	}
	if got := RaftPeerNames(c, Founding{Voters: 3, RaftTLS: true}); !slices.Equal(got, []string{"*.events-brokers.kafka.svc"}) {
		t.Errorf("Raft certificate names %v", got)
	}
	if arg(BuildStatefulSet(c, Founding{Voters: 3}, 3, "h", nil).Spec.Template.Spec.Containers[0].Args, "--raft-tls-ca-file") != "" {
		t.Error("Raft TLS flags on a cluster founded without")
	}
}

// A secured cluster created now runs its replication listener over TLS,
// serving the Raft certificate, which then names the operator's seed
// address too; one created before keeps SASL_PLAINTEXT, as its ConfigMap
// does not record TLS for it.
func TestReplicationTLSIsFixedAtCreation(t *testing.T) {
	c := securedCluster()
	founding := NewFounding(c)
	if !founding.ReplicationTLS || NewFounding(cluster(3)).ReplicationTLS {
		t.Fatalf("a secured cluster founds with %+v, one without listeners with %+v", founding, NewFounding(cluster(3)))
	}
	if f := FoundingOf(c, BuildConfigMap(c, founding)); !f.ReplicationTLS {
		t.Errorf("read back %+v", f)
	}
	older := BuildConfigMap(c, founding)
	delete(older.Annotations, AnnotationReplicationTLS)
	if f := FoundingOf(c, older); f.ReplicationTLS || !f.RaftTLS {
		t.Errorf("a cluster created before replication TLS reads back %+v", f)
	}

	args := BuildStatefulSet(c, founding, 3, "h", nil).Spec.Template.Spec.Containers[0].Args
	if got := arg(args, "--listener-security-protocol-map"); !strings.HasPrefix(got, "REPLICATION:SASL_SSL,") {
		t.Errorf("protocols %s", got)
	}
	if got := arg(args, "--listener-ssl-dirs"); !strings.HasPrefix(got, "REPLICATION=/etc/raftka/raft-tls") {
		t.Errorf("listener certificates %s", got)
	}
	if got := arg(args, "--inter-broker-ssl-ca-file"); got != "/etc/raftka/raft-tls/ca.crt" {
		t.Errorf("the brokers trust %q", got)
	}
	if got := RaftPeerNames(c, founding); !slices.Equal(got, []string{"*.events-brokers.kafka.svc", "events-brokers.kafka.svc"}) ||
		!strings.HasPrefix(OperatorBootstrap(c), got[1]+":") {
		t.Errorf("Raft certificate names %v, the operator dials %s", got, OperatorBootstrap(c))
	}

	plain := BuildStatefulSet(c, FoundingOf(c, older), 3, "h", nil).Spec.Template.Spec.Containers[0].Args
	if got := arg(plain, "--listener-security-protocol-map"); !strings.HasPrefix(got, "REPLICATION:SASL_PLAINTEXT,") || arg(plain, "--inter-broker-ssl-ca-file") != "" {
		t.Errorf("a cluster created before: protocols %s, CA %q", got, arg(plain, "--inter-broker-ssl-ca-file"))
	}
}

// TestInterBrokerTLSMovesOlderClusters: spec.interBrokerTLS turns on what
// a cluster's creation left off (the Raft transport's TLS; the
// replication listener's where the cluster has listeners), never turns
// anything off, and a pod's transport reads back from the flags the
// StatefulSet gives it.
func TestInterBrokerTLSMovesOlderClusters(t *testing.T) {
	secured, plain := securedCluster(), cluster(3)
	olderSecured := BuildConfigMap(secured, Founding{Voters: 3})
	olderPlain := BuildConfigMap(plain, Founding{Voters: 3})
	podOf := func(c *raftkav1.BrokerCluster, f Founding) *corev1.Pod {
		return &corev1.Pod{Spec: BuildStatefulSet(c, f, 3, "h", nil).Spec.Template.Spec}
	}
	for name, tc := range map[string]struct {
		c    *raftkav1.BrokerCluster
		cm   *corev1.ConfigMap
		move bool
		want Transport
	}{
		"a secured cluster created before, left":  {secured, olderSecured, false, Transport{}},
		"a secured cluster created before, moved": {secured, olderSecured, true, Transport{RaftTLS: true, ReplicationTLS: true}},
		"a cluster without listeners, moved":      {plain, olderPlain, true, Transport{RaftTLS: true}},
		"a secured cluster created now":           {secured, BuildConfigMap(secured, NewFounding(secured)), false, Transport{RaftTLS: true, ReplicationTLS: true}},
	} {
		c := tc.c.DeepCopy()
		if tc.move {
			c.Spec.InterBrokerTLS = raftkav1.InterBrokerTLSEnabled
		}
		f := FoundingOf(c, tc.cm)
		if got := f.Transport(); got != tc.want {
			t.Errorf("%s: transport %s, want %s", name, got, tc.want)
		}
		if got := PodTransport(podOf(c, f)); got != tc.want {
			t.Errorf("%s: its pods run %s, want %s", name, got, tc.want)
		}
		// Recorded, the move holds once the field is unset.
		c.Spec.InterBrokerTLS = ""
		if got := FoundingOf(c, BuildConfigMap(c, f)).Transport(); got != tc.want {
			t.Errorf("%s: read back without the field: %s", name, got)
		}
	}
	moved := plain.DeepCopy()
	moved.Spec.InterBrokerTLS = raftkav1.InterBrokerTLSEnabled
	if f := NewFounding(moved); !f.RaftTLS {
		t.Errorf("a cluster without listeners created with interBrokerTLS founds with %+v", f)
	}
}
