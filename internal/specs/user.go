package specs

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/certs"
)

// Keys of a User's Secret.
const (
	UserSecretUsername = "username"
	UserSecretPassword = "password"
	// UserSecretJAASConfig is the Java client's sasl.jaas.config.
	UserSecretJAASConfig = "sasl.jaas.config"
	// A tls User's certificate and key, and the clients CA that signed it.
	UserSecretCertificate = "user.crt"
	UserSecretKey         = "user.key"
	UserSecretCA          = "ca.crt"
	// The certificate and key as a PKCS#12 key store, and its password,
	// for Java clients that take no PEM.
	UserSecretKeyStore         = "user.p12"
	UserSecretKeyStorePassword = "user.password"
)

// TLSUser tells whether a User authenticates with a client certificate.
func TLSUser(u *raftkav1.User) bool { return u.Spec.Authentication.Type == raftkav1.AuthenticationTLS }

// PrincipalName is the name in a User's Kafka principal, and the user
// entity of its quotas: a client certificate's subject, CN=<userName>, for
// a tls User.
func PrincipalName(u *raftkav1.User) string {
	if TLSUser(u) {
		return "CN=" + u.KafkaName()
	}
	return u.KafkaName()
}

// Principal is a User's Kafka principal.
func Principal(u *raftkav1.User) string { return "User:" + PrincipalName(u) }

// PrincipalNames are the names a User's Kafka user goes by in either
// authentication, the current one first: what the User leaves behind on
// the brokers, ACLs and quotas, may be under the other since a change of
// spec.authentication.
func PrincipalNames(u *raftkav1.User) []string {
	if TLSUser(u) {
		return []string{PrincipalName(u), u.KafkaName()}
	}
	return []string{u.KafkaName(), "CN=" + u.KafkaName()}
}

// UserSecretName is the Secret of a User's password or certificate: the
// User's name.
func UserSecretName(u *raftkav1.User) string { return u.Name }

// UserLabels mark what a User owns.
func UserLabels(u *raftkav1.User) map[string]string {
	return map[string]string{LabelName: "raftka", LabelComponent: "user", LabelManagedBy: "raftka-operator", LabelCluster: u.Spec.ClusterRef.Name}
}

// BuildUserCertificateSecret is the Secret a client of a tls User mounts:
// its certificate and key, also as a PKCS#12 key store, and the clients
// CA that signed them.
func BuildUserCertificateSecret(u *raftkav1.User, cert certs.Pair, clientsCA []byte, keyStore certs.Store) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: UserSecretName(u), Namespace: u.Namespace, Labels: UserLabels(u)},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{UserSecretCertificate: cert.Cert, UserSecretKey: cert.Key, UserSecretCA: clientsCA,
			UserSecretKeyStore: keyStore.Data, UserSecretKeyStorePassword: []byte(keyStore.Password)},
	}
}

// UserKeyStore is the key store a tls User's Secret holds.
func UserKeyStore(data map[string][]byte) certs.Store {
	return certs.Store{Data: data[UserSecretKeyStore], Password: string(data[UserSecretKeyStorePassword])}
}

// BuildUserSecret is the Secret a client of the User mounts: its user
// name, its password, and the JAAS line Java clients take.
func BuildUserSecret(u *raftkav1.User, password string) *corev1.Secret {
	jaas := fmt.Sprintf("org.apache.kafka.common.security.scram.ScramLoginModule required username=%q password=%q;", u.KafkaName(), password)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: UserSecretName(u), Namespace: u.Namespace, Labels: UserLabels(u)},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			UserSecretUsername:   []byte(u.KafkaName()),
			UserSecretPassword:   []byte(password),
			UserSecretJAASConfig: []byte(jaas),
		},
	}
}

// UserACLs are the ACL bindings a User's spec asks for, one per
// operation of each rule.
func UserACLs(u *raftkav1.User) ([]brokerclient.ACL, error) {
	if u.Spec.Authorization == nil {
		return nil, nil
	}
	var out []brokerclient.ACL
	for i, rule := range u.Spec.Authorization.ACLs {
		base := brokerclient.ACL{Principal: Principal(u), Host: "*", Permission: kmsg.ACLPermissionTypeAllow,
			ResourceName: rule.Resource.Name, PatternType: kmsg.ACLResourcePatternTypeLiteral}
		if rule.Host != "" {
			base.Host = rule.Host
		}
		if rule.Type == raftkav1.ACLDeny {
			base.Permission = kmsg.ACLPermissionTypeDeny
		}
		switch rule.Resource.Type {
		case raftkav1.ACLResourceTopic:
			base.ResourceType = kmsg.ACLResourceTypeTopic
		case raftkav1.ACLResourceGroup:
			base.ResourceType = kmsg.ACLResourceTypeGroup
		case raftkav1.ACLResourceTransactionalID:
			base.ResourceType = kmsg.ACLResourceTypeTransactionalId
		case raftkav1.ACLResourceCluster:
			// Kafka's one cluster resource.
			base.ResourceType, base.ResourceName = kmsg.ACLResourceTypeCluster, "kafka-cluster"
		default:
			return nil, fmt.Errorf("acls[%d]: unknown resource type %q", i, rule.Resource.Type)
		}
		if rule.Resource.PatternType == raftkav1.ACLPatternPrefix {
			base.PatternType = kmsg.ACLResourcePatternTypePrefixed
		}
		for _, op := range rule.Operations {
			operation, err := kmsg.ParseACLOperation(string(op))
			if err != nil || operation == kmsg.ACLOperationAny || operation == kmsg.ACLOperationUnknown {
				return nil, fmt.Errorf("acls[%d]: unknown operation %q", i, op)
			}
			acl := base
			acl.Operation = operation
			out = append(out, acl)
		}
	}
	return out, nil
}

// UserQuotas are the client quota values a User's spec asks for, by
// Kafka's keys, for the entity user=<its name>.
func UserQuotas(u *raftkav1.User) map[string]float64 {
	out := map[string]float64{}
	if q := u.Spec.Quotas; q != nil {
		if q.ProducerByteRate != nil {
			out["producer_byte_rate"] = float64(*q.ProducerByteRate)
		}
		if q.ConsumerByteRate != nil {
			out["consumer_byte_rate"] = float64(*q.ConsumerByteRate)
		}
	}
	return out
}
