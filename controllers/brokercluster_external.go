package controllers

import (
	"context"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/specs"
)

// applyExternalServices writes the Services of the external listeners for
// every broker the StatefulSet runs or will run, deletes those of brokers
// and listeners gone, and returns the addresses the brokers advertise on
// them; awaiting is true while a load balancer has no address yet.
func (r *BrokerClusterReconciler) applyExternalServices(ctx context.Context, c *raftkav1.BrokerCluster) (specs.ExternalAddresses, bool, error) {
	brokers := c.Spec.Replicas
	var current appsv1.StatefulSet
	if err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: specs.StatefulSetName(c)}, &current); err == nil {
		// A scale-in holds its brokers until they are drained.
		brokers = max(brokers, ptr.Deref(current.Spec.Replicas, 0))
	} else if !apierrors.IsNotFound(err) {
		return nil, false, err
	}
	listeners := map[string]raftkav1.ListenerSpec{}
	for _, l := range c.Spec.Listeners {
		listeners[l.Name] = l
	}
	external := specs.ExternalAddresses{}
	awaiting := false
	wanted := map[string]bool{}
	for _, svc := range specs.BuildExternalServices(c, brokers) {
		wanted[svc.Name] = true
		if err := r.apply(ctx, c, svc); err != nil {
			return nil, false, err
		}
		id, perBroker := svc.Labels[specs.LabelBroker]
		if !perBroker {
			continue
		}
		l := listeners[svc.Labels[specs.LabelListener]]
		n, _ := strconv.Atoi(id)
		addr, ok := specs.AdvertisedExternal(l, svc)
		if !ok {
			awaiting = true
			continue
		}
		if external[l.Name] == nil {
			external[l.Name] = map[int32]string{}
		}
		external[l.Name][int32(n)] = addr
	}
	var stale corev1.ServiceList
	if err := r.List(ctx, &stale, client.InNamespace(c.Namespace), client.MatchingLabels{specs.LabelCluster: c.Name, specs.LabelComponent: "external-listener"}); err != nil {
		return nil, false, err
	}
	for i := range stale.Items {
		svc := &stale.Items[i]
		if wanted[svc.Name] || !metav1.IsControlledBy(svc, c) {
			continue
		}
		if err := r.Delete(ctx, svc); client.IgnoreNotFound(err) != nil {
			return nil, false, err
		}
	}
	return external, awaiting, nil
}

// hostIPs are the addresses of the nodes of the brokers' pods, by broker
// id, where a pod has one.
func (r *BrokerClusterReconciler) hostIPs(ctx context.Context, c *raftkav1.BrokerCluster) map[int32]string {
	hostIPs := map[int32]string{}
	if pods, err := r.pods(ctx, c); err == nil {
		for _, p := range pods {
			if p.Status.HostIP != "" {
				hostIPs[ordinalOf(p.Name)] = p.Status.HostIP
			}
		}
	}
	return hostIPs
}

// observeListeners reports where each listener's clients connect: the
// client Service for an internal one; the brokers' advertised addresses
// for an external one, a node port's on the node of each broker's pod.
func (r *BrokerClusterReconciler) observeListeners(c *raftkav1.BrokerCluster, external specs.ExternalAddresses, hostIPs map[int32]string) {
	c.Status.Listeners = nil
	for _, l := range c.Spec.Listeners {
		status := raftkav1.ListenerStatus{Name: l.Name}
		if !l.External() {
			status.BootstrapServers = specs.ListenerBootstrap(c, l)
		} else {
			var addrs []string
			for id, addr := range external[l.Name] {
				if addr, ok := specs.OnNode(addr, hostIPs[id]); ok {
					addrs = append(addrs, addr)
				}
			}
			sort.Strings(addrs)
			status.BootstrapServers = strings.Join(addrs, ",")
		}
		c.Status.Listeners = append(c.Status.Listeners, status)
	}
}
