package specs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

// Labels of the Services of external listeners.
const (
	LabelListener = "raftka.io/listener"
	// LabelBroker is the broker id a per-broker Service reaches; the
	// bootstrap Service has none.
	LabelBroker = "raftka.io/broker"
	// nodeIPVar is the broker container's node address (status.hostIP),
	// which a NodePort listener advertises.
	nodeIPVar = "NODE_IP"
)

// ExternalAddresses are the addresses brokers advertise on external
// listeners, by listener name and broker id, as far as known: a
// LoadBalancer's comes after its Service.
type ExternalAddresses map[string]map[int32]string

// ExternalServiceName is broker id's Service of an external listener.
func ExternalServiceName(c *raftkav1.BrokerCluster, l raftkav1.ListenerSpec, id int32) string {
	return fmt.Sprintf("%s-%d-%s", StatefulSetName(c), id, l.Name)
}

// ExternalBootstrapName is the Service that reaches any broker on an
// external listener, where clients start.
func ExternalBootstrapName(c *raftkav1.BrokerCluster, l raftkav1.ListenerSpec) string {
	return fmt.Sprintf("%s-%s-bootstrap", c.Name, l.Name)
}

// ExternalLabels mark the Services of a cluster's external listener.
func ExternalLabels(c *raftkav1.BrokerCluster, l raftkav1.ListenerSpec) map[string]string {
	labels := Labels(c)
	labels[LabelComponent] = "external-listener"
	labels[LabelListener] = l.Name
	return labels
}

// BuildExternalServices are the Services of the cluster's external
// listeners for brokers 0 to brokers-1: one per broker, which reaches
// that broker's pod alone (so that each broker advertises an address of
// its own), and a bootstrap one. A per-broker Service keeps traffic on
// the node of its pod (externalTrafficPolicy Local): the node a broker
// advertises, and the client's address is kept for ACL host rules.
func BuildExternalServices(c *raftkav1.BrokerCluster, brokers int32) []*corev1.Service {
	var out []*corev1.Service
	for _, l := range c.Spec.Listeners {
		if !l.External() {
			continue
		}
		kind := corev1.ServiceTypeNodePort
		if l.Type == raftkav1.ListenerLoadBalancer {
			kind = corev1.ServiceTypeLoadBalancer
		}
		ports := []corev1.ServicePort{{Name: l.Name, Port: l.Port, TargetPort: intstr.FromString(l.Name), Protocol: corev1.ProtocolTCP}}
		for id := int32(0); id < brokers; id++ {
			labels := ExternalLabels(c, l)
			labels[LabelBroker] = strconv.Itoa(int(id))
			selector := Labels(c)
			selector[appsv1.StatefulSetPodNameLabel] = fmt.Sprintf("%s-%d", StatefulSetName(c), id)
			out = append(out, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: ExternalServiceName(c, l, id), Namespace: c.Namespace, Labels: labels},
				Spec: corev1.ServiceSpec{Type: kind, Selector: selector, Ports: ports,
					ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
					// A broker restarting still answers on its address.
					PublishNotReadyAddresses: true},
			})
		}
		out = append(out, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: ExternalBootstrapName(c, l), Namespace: c.Namespace, Labels: ExternalLabels(c, l)},
			Spec:       corev1.ServiceSpec{Type: kind, Selector: Labels(c), Ports: ports},
		})
	}
	return out
}

// AdvertisedExternal is what a broker advertises on an external listener,
// read from its Service as stored: its node's address and the node port,
// or its load balancer's address; false while the load balancer has none.
func AdvertisedExternal(l raftkav1.ListenerSpec, svc *corev1.Service) (string, bool) {
	switch l.Type {
	case raftkav1.ListenerNodePort:
		for _, p := range svc.Spec.Ports {
			if p.Name == l.Name && p.NodePort > 0 {
				return fmt.Sprintf("$(%s):%d", nodeIPVar, p.NodePort), true
			}
		}
	case raftkav1.ListenerLoadBalancer:
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			host := ing.IP
			if ing.Hostname != "" {
				host = ing.Hostname
			}
			if host != "" {
				return fmt.Sprintf("%s:%d", host, l.Port), true
			}
		}
	}
	return "", false
}

// OnNode is an advertised external address as a client sees it: a node
// port's with the address of the node of the broker's pod, false while
// the pod has none.
func OnNode(advertised, hostIP string) (string, bool) {
	rest, ok := strings.CutPrefix(advertised, "$("+nodeIPVar+")")
	if !ok {
		return advertised, true
	}
	return hostIP + rest, hostIP != ""
}

// advertisedByIDArg is the brokers' --advertised-listeners-by-id.
func advertisedByIDArg(external ExternalAddresses) string {
	byID := map[int32][]string{}
	for name, addrs := range external {
		for id, addr := range addrs {
			byID[id] = append(byID[id], strings.ToUpper(name)+"://"+addr)
		}
	}
	ids := make([]int32, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var entries []string
	for _, id := range ids {
		sort.Strings(byID[id])
		entries = append(entries, fmt.Sprintf("%d=%s", id, strings.Join(byID[id], ",")))
	}
	return strings.Join(entries, ";")
}

// hasNodePortListener tells whether the brokers need their node's address.
func hasNodePortListener(c *raftkav1.BrokerCluster) bool {
	for _, l := range c.Spec.Listeners {
		if l.Type == raftkav1.ListenerNodePort {
			return true
		}
	}
	return false
}
