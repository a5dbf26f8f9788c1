package specs

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

// OperatorPods are the operator's own pods, as a NetworkPolicy names them.
type OperatorPods struct {
	Namespace string
	Labels    map[string]string
}

// Known tells whether the operator knows where it runs.
func (o OperatorPods) Known() bool { return o.Namespace != "" && len(o.Labels) > 0 }

// NetworkPolicyName is the broker pods' NetworkPolicy.
func NetworkPolicyName(c *raftkav1.BrokerCluster) string { return c.Name + "-brokers" }

// NetworkPolicyEnabled tells whether the cluster asks for one.
func NetworkPolicyEnabled(c *raftkav1.BrokerCluster) bool {
	return c.Spec.NetworkPolicy != nil && c.Spec.NetworkPolicy.Enabled
}

// BuildNetworkPolicy admits to the brokers' own ports only the cluster's
// brokers and the operator's pods (and metricsFrom to HTTP), and clients
// to the listeners from anywhere. The brokers' own ports are Raft, which
// does not authenticate its peers, HTTP, where a broker asks to join the
// metadata group, and replication; on a cluster without listeners of its
// own, the one Kafka port is both the clients' and the brokers'.
func BuildNetworkPolicy(c *raftkav1.BrokerCluster, operator OperatorPods) *networkingv1.NetworkPolicy {
	port := func(name string) networkingv1.NetworkPolicyPort {
		p := intstr.FromString(name)
		return networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: &p}
	}
	peers := []networkingv1.NetworkPolicyPeer{
		{PodSelector: &metav1.LabelSelector{MatchLabels: Labels(c)}},
		{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: operator.Namespace}},
			PodSelector: &metav1.LabelSelector{MatchLabels: operator.Labels}},
	}
	own := []networkingv1.NetworkPolicyPort{port("raft"), port("http")}
	if Secured(c) {
		own = append([]networkingv1.NetworkPolicyPort{port("replication")}, own...)
	}
	var clients []networkingv1.NetworkPolicyPort
	for _, p := range listenerPorts(c, true) {
		clients = append(clients, port(p.Name))
	}
	rules := []networkingv1.NetworkPolicyIngressRule{
		{From: peers, Ports: own},
		{Ports: clients},
	}
	if np := c.Spec.NetworkPolicy; np != nil && len(np.MetricsFrom) > 0 {
		rules = append(rules, networkingv1.NetworkPolicyIngressRule{From: np.MetricsFrom, Ports: []networkingv1.NetworkPolicyPort{port("http")}})
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyName(c), Namespace: c.Namespace, Labels: Labels(c)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: Labels(c)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     rules,
		},
	}
}
