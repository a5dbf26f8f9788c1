package specs

import (
	"fmt"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/certs"
)

// The brokers' own listener and users, once a cluster has listeners of
// its own (spec.listeners): the brokers fetch from each other and the
// operator administers the cluster on the replication listener, both
// authenticated with SCRAM-SHA-512 as super users whose passwords the
// operator generates into the internal credentials Secret.
const (
	ReplicationPort = 9091
	// ReplicationListener is the brokers' name of it; first among their
	// listeners, the inter-broker one.
	ReplicationListener = "REPLICATION"
	BrokerUser          = "raftka-broker"
	OperatorUser        = "raftka-operator"
	internalUsersPath   = "/etc/raftka/internal-users"
	listenerTLSPath     = "/etc/raftka/tls"
	raftTLSPath         = "/etc/raftka/raft-tls"
)

// CASecretName is the Secret of the CA the operator made for the cluster
// (tls.crt, tls.key).
func CASecretName(c *raftkav1.BrokerCluster) string { return c.Name + "-ca" }

// CACertSecretName is the Secret of the cluster CA's certificate alone
// (ca.crt), which clients of listeners with the operator's certificates
// trust; the CA's key stays in CASecretName.
func CACertSecretName(c *raftkav1.BrokerCluster) string { return c.Name + "-ca-cert" }

// Keys of the CACertSecretName Secret: the CA's certificate, and as a
// PKCS#12 trust store with its password, for Java clients that take no
// PEM.
const (
	CACertKey                = "ca.crt"
	CACertTrustStore         = "ca.p12"
	CACertTrustStorePassword = "ca.password"
)

// BuildCACertSecret is the Secret that clients of listeners with the
// operator's certificates mount to trust them.
func BuildCACertSecret(c *raftkav1.BrokerCluster, caCert []byte, trustStore certs.Store) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: CACertSecretName(c), Namespace: c.Namespace, Labels: Labels(c)},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{CACertKey: caCert,
			CACertTrustStore: trustStore.Data, CACertTrustStorePassword: []byte(trustStore.Password)}}
}

// CATrustStore is the trust store a CACertSecretName Secret holds.
func CATrustStore(data map[string][]byte) certs.Store {
	return certs.Store{Data: data[CACertTrustStore], Password: string(data[CACertTrustStorePassword])}
}

// ListenerTLSSecretName is the Secret of the listener certificate the
// operator issues from the cluster CA (ca.crt, tls.crt, tls.key), for the
// listeners with tls but no secretName.
func ListenerTLSSecretName(c *raftkav1.BrokerCluster) string { return c.Name + "-listener-tls" }

// IssuesListenerCertificate tells whether a listener of the cluster serves
// a certificate the operator issues.
func IssuesListenerCertificate(c *raftkav1.BrokerCluster) bool {
	return slices.ContainsFunc(c.Spec.Listeners, func(l raftkav1.ListenerSpec) bool { return l.TLS != nil && l.TLS.SecretName == "" })
}

// ListenerHosts are the names the operator's listener certificate
// carries: the client Service and every broker under the headless one.
func ListenerHosts(c *raftkav1.BrokerCluster) []string {
	return []string{fmt.Sprintf("%s.%s.svc", ClientServiceName(c), c.Namespace), fmt.Sprintf("*.%s.%s.svc", HeadlessServiceName(c), c.Namespace)}
}

// ListenerCertificateNames are the names the operator's listener
// certificate carries: ListenerHosts, and the hosts clients dial on the
// external listeners it certifies (tls without a secretName): a load
// balancer's, or for a node port the node of each broker's pod, once
// known. A broker that lands on another node has its new address
// certified at the next reconcile, which its pod's move causes.
func ListenerCertificateNames(c *raftkav1.BrokerCluster, external ExternalAddresses, hostIPs map[int32]string) []string {
	var hosts []string
	for _, l := range c.Spec.Listeners {
		if !l.External() || l.TLS == nil || l.TLS.SecretName != "" {
			continue
		}
		for id, advertised := range external[l.Name] {
			addr, ok := OnNode(advertised, hostIPs[id])
			if !ok {
				continue
			}
			if host, _, err := net.SplitHostPort(addr); err == nil && !slices.Contains(hosts, host) {
				hosts = append(hosts, host)
			}
		}
	}
	slices.Sort(hosts)
	return append(ListenerHosts(c), hosts...)
}

// listenerTLSSecret is the Secret of a TLS listener's certificate: the
// user's, or the operator's.
func listenerTLSSecret(c *raftkav1.BrokerCluster, l raftkav1.ListenerSpec) string {
	if l.TLS.SecretName != "" {
		return l.TLS.SecretName
	}
	return ListenerTLSSecretName(c)
}

// ClientsCASecretName is the Secret of the CA that signs the client
// certificates of tls Users (tls.crt, tls.key): a CA of its own, as the
// cluster's signs the certificates the Raft transport trusts.
func ClientsCASecretName(c *raftkav1.BrokerCluster) string { return c.Name + "-clients-ca" }

// CertificateAuthentication tells whether a listener authenticates its
// clients with certificates of the clients CA.
func CertificateAuthentication(l raftkav1.ListenerSpec) bool {
	return l.Authentication != nil && l.Authentication.Type == raftkav1.AuthenticationTLS
}

// AuthenticatesCertificates tells whether any listener of the cluster
// authenticates its clients with certificates, and so needs the clients CA.
func AuthenticatesCertificates(c *raftkav1.BrokerCluster) bool {
	return slices.ContainsFunc(c.Spec.Listeners, CertificateAuthentication)
}

// RaftTLSSecretName is the Secret of the brokers' Raft certificate
// (ca.crt, tls.crt, tls.key).
func RaftTLSSecretName(c *raftkav1.BrokerCluster) string { return c.Name + "-raft-tls" }

// RaftPeerNames are the names the brokers' Raft certificate carries: every
// broker's Raft address is a name under the headless Service.
func RaftPeerNames(c *raftkav1.BrokerCluster, founding Founding) []string {
	names := []string{fmt.Sprintf("*.%s.%s.svc", HeadlessServiceName(c), c.Namespace)}
	if founding.ReplicationTLS {
		// The operator's seed address (OperatorBootstrap).
		names = append(names, fmt.Sprintf("%s.%s.svc", HeadlessServiceName(c), c.Namespace))
	}
	return names
}

// raftTLSArgs are the brokers' flags of a mutual TLS Raft transport.
func raftTLSArgs(founding Founding) []string {
	if !founding.RaftTLS {
		return nil
	}
	return []string{raftTLSCAFlag + raftTLSPath + "/ca.crt", "--raft-tls-cert-file=" + raftTLSPath + "/" + corev1.TLSCertKey,
		"--raft-tls-key-file=" + raftTLSPath + "/" + corev1.TLSPrivateKeyKey}
}

// raftTLSVolume is the brokers' Raft certificate.
func raftTLSVolume(c *raftkav1.BrokerCluster, founding Founding) ([]corev1.Volume, []corev1.VolumeMount) {
	if !founding.RaftTLS {
		return nil, nil
	}
	return []corev1.Volume{{Name: "raft-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: RaftTLSSecretName(c)}}}},
		[]corev1.VolumeMount{{Name: "raft-tls", MountPath: raftTLSPath, ReadOnly: true}}
}

// InternalCredentialsName is the Secret of the brokers' and the operator's
// passwords, one key per user.
func InternalCredentialsName(c *raftkav1.BrokerCluster) string {
	return c.Name + "-internal-credentials"
}

// Secured tells whether the cluster has listeners of its own, and so an
// authenticated replication listener.
func Secured(c *raftkav1.BrokerCluster) bool { return len(c.Spec.Listeners) > 0 }

// OperatorBootstrap is where the operator reaches the brokers: the
// replication listener through the headless Service, or the one listener
// of a cluster without listeners of its own.
func OperatorBootstrap(c *raftkav1.BrokerCluster) string {
	if Secured(c) {
		return fmt.Sprintf("%s.%s.svc:%d", HeadlessServiceName(c), c.Namespace, ReplicationPort)
	}
	return BootstrapServers(c)
}

// clientPort is the port of the first listener clients use.
func clientPort(c *raftkav1.BrokerCluster) int32 {
	if Secured(c) {
		return c.Spec.Listeners[0].Port
	}
	return KafkaPort
}

// ListenerBootstrap is the client Service's address at a listener.
func ListenerBootstrap(c *raftkav1.BrokerCluster, l raftkav1.ListenerSpec) string {
	return fmt.Sprintf("%s.%s.svc:%d", ClientServiceName(c), c.Namespace, l.Port)
}

// BrokerAddress is broker id's address at the first client listener.
func BrokerAddress(c *raftkav1.BrokerCluster, id int32) string {
	return fmt.Sprintf("%s:%d", BrokerHost(c, id), clientPort(c))
}

// SecurityProtocol is Kafka's name of a listener's protocol.
func SecurityProtocol(l raftkav1.ListenerSpec) string {
	scram := l.Authentication != nil && l.Authentication.Type == raftkav1.AuthenticationSCRAMSHA512
	switch {
	case l.TLS != nil && scram:
		return "SASL_SSL"
	case l.TLS != nil:
		return "SSL"
	case scram:
		return "SASL_PLAINTEXT"
	}
	return "PLAINTEXT"
}

// listenerName is the brokers' name of a listener.
func listenerName(l raftkav1.ListenerSpec) string { return strings.ToUpper(l.Name) }

// ValidateListeners refuses what the CRD's schema cannot: a listener
// named twice.
func ValidateListeners(c *raftkav1.BrokerCluster) error {
	seen := map[string]bool{}
	for _, l := range c.Spec.Listeners {
		if seen[l.Name] {
			return fmt.Errorf("listener %s is named twice", l.Name)
		}
		seen[l.Name] = true
	}
	if c.Spec.Authorization != nil && !Secured(c) {
		return fmt.Errorf("authorization needs spec.listeners: without them, the brokers' one listener authenticates no one")
	}
	return nil
}

// listenerArgs are the broker flags of its Kafka listeners; self is the
// broker's own DNS name.
func listenerArgs(c *raftkav1.BrokerCluster, self string, external ExternalAddresses, founding Founding) []string {
	if !Secured(c) {
		return []string{fmt.Sprintf("--listen=0.0.0.0:%d", KafkaPort), fmt.Sprintf("--advertised-address=%s:%d", self, KafkaPort)}
	}
	listen := []string{fmt.Sprintf("%s://0.0.0.0:%d", ReplicationListener, ReplicationPort)}
	advertised := []string{fmt.Sprintf("%s://%s:%d", ReplicationListener, self, ReplicationPort)}
	protocols := []string{ReplicationListener + ":SASL_PLAINTEXT"}
	var tlsDirs, clientAuth []string
	if founding.ReplicationTLS {
		// The Raft certificate names every broker's host and the
		// headless Service, and the brokers trust its CA.
		protocols[0] = ReplicationListener + ":SASL_SSL"
		tlsDirs = append(tlsDirs, ReplicationListener+"="+raftTLSPath)
	}
	for _, l := range c.Spec.Listeners {
		if CertificateAuthentication(l) {
			clientAuth = append(clientAuth, listenerName(l)+"=required")
		}
		listen = append(listen, fmt.Sprintf("%s://0.0.0.0:%d", listenerName(l), l.Port))
		advertised = append(advertised, fmt.Sprintf("%s://%s:%d", listenerName(l), self, l.Port))
		protocols = append(protocols, listenerName(l)+":"+SecurityProtocol(l))
		if l.TLS != nil {
			tlsDirs = append(tlsDirs, listenerName(l)+"="+listenerTLSPath+"/"+l.Name)
		}
	}
	superUsers := []string{"User:" + BrokerUser, "User:" + OperatorUser}
	if a := c.Spec.Authorization; a != nil {
		superUsers = append(superUsers, a.SuperUsers...)
	}
	args := []string{
		"--listeners=" + strings.Join(listen, ","),
		"--advertised-listeners=" + strings.Join(advertised, ","),
		"--listener-security-protocol-map=" + strings.Join(protocols, ","),
		"--scram-users-dir=" + internalUsersPath,
		"--inter-broker-user=" + BrokerUser,
		"--super-users=" + strings.Join(superUsers, ";"),
	}
	if len(tlsDirs) > 0 {
		args = append(args, "--listener-ssl-dirs="+strings.Join(tlsDirs, ","))
	}
	if len(clientAuth) > 0 {
		args = append(args, "--listener-ssl-client-auth="+strings.Join(clientAuth, ","))
	}
	if founding.ReplicationTLS {
		args = append(args, interBrokerCAFlag+raftTLSPath+"/ca.crt")
	}
	if c.Spec.Authorization != nil {
		args = append(args, "--authorizer=acl")
	}
	if byID := advertisedByIDArg(external); byID != "" {
		args = append(args, "--advertised-listeners-by-id="+byID)
	}
	return args
}

// listenerPorts are the container's and the Services' Kafka ports: the
// brokers' own first, then the clients' (clients only: the client
// Service).
func listenerPorts(c *raftkav1.BrokerCluster, clients bool) []corev1.ServicePort {
	if !Secured(c) {
		return []corev1.ServicePort{{Name: "kafka", Port: KafkaPort, TargetPort: intstr.FromString("kafka")}}
	}
	var ports []corev1.ServicePort
	if !clients {
		ports = append(ports, corev1.ServicePort{Name: "replication", Port: ReplicationPort, TargetPort: intstr.FromString("replication")})
	}
	for _, l := range c.Spec.Listeners {
		ports = append(ports, corev1.ServicePort{Name: l.Name, Port: l.Port, TargetPort: intstr.FromString(l.Name)})
	}
	return ports
}

// listenerVolumes are the Secrets the brokers' listeners read: the
// internal credentials and each TLS listener's certificate.
func listenerVolumes(c *raftkav1.BrokerCluster) ([]corev1.Volume, []corev1.VolumeMount) {
	if !Secured(c) {
		return nil, nil
	}
	volumes := []corev1.Volume{{Name: "internal-users", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: InternalCredentialsName(c),
		Items:      []corev1.KeyToPath{{Key: BrokerUser, Path: BrokerUser}, {Key: OperatorUser, Path: OperatorUser}},
	}}}}
	mounts := []corev1.VolumeMount{{Name: "internal-users", MountPath: internalUsersPath, ReadOnly: true}}
	for _, l := range c.Spec.Listeners {
		if l.TLS == nil {
			continue
		}
		name := "tls-" + l.Name
		served := []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: corev1.TLSCertKey}, {Key: corev1.TLSPrivateKeyKey, Path: corev1.TLSPrivateKeyKey}}
		source := corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: listenerTLSSecret(c, l), Items: served}}
		if CertificateAuthentication(l) {
			// The clients CA beside the listener's certificate, as the
			// ca.crt the broker checks client certificates against.
			source = corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: listenerTLSSecret(c, l)}, Items: served}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: ClientsCASecretName(c)},
					Items: []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: "ca.crt"}}}},
			}}}
		}
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: source})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: listenerTLSPath + "/" + l.Name, ReadOnly: true})
	}
	return volumes, mounts
}

// BuildInternalCredentials is the Secret of the brokers' and the
// operator's passwords, generated once by the operator and kept.
func BuildInternalCredentials(c *raftkav1.BrokerCluster, brokerPassword, operatorPassword string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: InternalCredentialsName(c), Namespace: c.Namespace, Labels: Labels(c)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{BrokerUser: []byte(brokerPassword), OperatorUser: []byte(operatorPassword)},
	}
}
