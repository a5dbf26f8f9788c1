package tenancy

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

// Admits tells whether objects of namespace ns, whose labels are given,
// may use cluster c; nil when they may, else why not.
func Admits(c *raftkav1.BrokerCluster, ns string, nsLabels map[string]string) error {
	if ns == c.Namespace {
		return nil
	}
	if c.Spec.Tenants == nil {
		return fmt.Errorf("BrokerCluster %s/%s admits no other namespace (no spec.tenants)", c.Namespace, c.Name)
	}
	selector, err := metav1.LabelSelectorAsSelector(&c.Spec.Tenants.NamespaceSelector)
	if err != nil {
		return fmt.Errorf("BrokerCluster %s/%s: spec.tenants.namespaceSelector: %w", c.Namespace, c.Name, err)
	}
	if !selector.Matches(labels.Set(nsLabels)) {
		return fmt.Errorf("BrokerCluster %s/%s does not admit namespace %s: its labels do not match spec.tenants.namespaceSelector", c.Namespace, c.Name, ns)
	}
	return nil
}

// Prefix is what the names of a tenant in namespace ns must start with on
// cluster c: empty in the cluster's own namespace, or where the cluster
// leaves names free.
func Prefix(c *raftkav1.BrokerCluster, ns string) string {
	if ns == c.Namespace || c.Spec.Tenants == nil || c.Spec.Tenants.NamePrefix == raftkav1.TenantPrefixNone {
		return ""
	}
	return ns + "."
}

// CheckTopic tells whether a tenant of namespace ns may name a Kafka topic
// so.
func CheckTopic(c *raftkav1.BrokerCluster, ns, topic string) error {
	if p := Prefix(c, ns); !strings.HasPrefix(topic, p) {
		return fmt.Errorf("topic %s of namespace %s must start with %q on BrokerCluster %s/%s", topic, ns, p, c.Namespace, c.Name)
	}
	return nil
}

// CheckUser tells whether a tenant of namespace ns may have this User: its
// name under the prefix, and its ACLs on resources under the prefix only
// (prefix patterns too), the cluster only for IdempotentWrite.
func CheckUser(c *raftkav1.BrokerCluster, ns string, u *raftkav1.User) error {
	p := Prefix(c, ns)
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(u.KafkaName(), p) {
		return fmt.Errorf("user %s of namespace %s must start with %q on BrokerCluster %s/%s", u.KafkaName(), ns, p, c.Namespace, c.Name)
	}
	if u.Spec.Authorization == nil {
		return nil
	}
	for i, rule := range u.Spec.Authorization.ACLs {
		switch r := rule.Resource; {
		case r.Type == raftkav1.ACLResourceCluster:
			for _, op := range rule.Operations {
				if op != "IdempotentWrite" {
					return fmt.Errorf("acls[%d]: a tenant may have only IdempotentWrite on the cluster, not %s", i, op)
				}
			}
		case !strings.HasPrefix(r.Name, p):
			return fmt.Errorf("acls[%d]: %s %q is outside the tenant's prefix %q", i, r.Type, r.Name, p)
		}
	}
	return nil
}

// CheckGroup tells whether a tenant of namespace ns may watch (and scale)
// this consumer group over these topics: all under its prefix.
func CheckGroup(c *raftkav1.BrokerCluster, ns, group string, topics []string) error {
	p := Prefix(c, ns)
	for _, name := range append([]string{group}, topics...) {
		if !strings.HasPrefix(name, p) {
			return fmt.Errorf("%q of namespace %s must start with %q on BrokerCluster %s/%s", name, ns, p, c.Namespace, c.Name)
		}
	}
	return nil
}

// AdmissionConfigMap is the ConfigMap, in the operator's namespace, that
// the API server's tenant admission policies (config/admission) read
// their parameters from: tenants cannot write there.
const AdmissionConfigMap = "raftka-tenants"

// maxKeyLength is a ConfigMap key's limit.
const maxKeyLength = 253

// AdmissionParameters are the data of AdmissionConfigMap, derived from the
// clusters the operator manages and every namespace's labels: a key
// "<cluster namespace>_<cluster>" per cluster, so that the policies judge
// only objects naming a cluster this operator decides for, and a key
// "<tenant namespace>_<cluster namespace>_<cluster>" per namespace the
// cluster admits, its value the names' prefix there. Neither namespaces nor
// object names hold "_", so no two keys are alike. A key longer than a
// ConfigMap allows is left out: the policies then refuse that cluster's
// tenants, and the controllers decide alone if the cluster's own key is
// the one left out.
func AdmissionParameters(clusters []raftkav1.BrokerCluster, namespaceLabels map[string]map[string]string) map[string]string {
	data := map[string]string{}
	put := func(key, value string) {
		if len(key) <= maxKeyLength {
			data[key] = value
		}
	}
	for i := range clusters {
		c := &clusters[i]
		put(c.Namespace+"_"+c.Name, "")
		if c.Spec.Tenants == nil {
			continue
		}
		for ns, labels := range namespaceLabels {
			if ns != c.Namespace && Admits(c, ns, labels) == nil {
				put(ns+"_"+c.Namespace+"_"+c.Name, Prefix(c, ns))
			}
		}
	}
	return data
}
