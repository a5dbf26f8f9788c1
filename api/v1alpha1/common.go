package v1alpha1

// ClusterReference names a BrokerCluster.
type ClusterReference struct {
	// Name of the BrokerCluster.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace of the BrokerCluster; the object's own when unset. A
	// cluster in another namespace serves the object only if its
	// spec.tenants admits the object's namespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace,omitempty"`
}

// ClusterKey is the namespace and name of the BrokerCluster a reference
// from an object in namespace ns names.
func (r ClusterReference) ClusterKey(ns string) (namespace, name string) {
	if r.Namespace != "" {
		return r.Namespace, r.Name
	}
	return ns, r.Name
}

// ReasonNotAdmitted: the object's namespace is not a tenant of the
// BrokerCluster in another namespace it names, or breaks the tenants'
// naming rule.
const ReasonNotAdmitted = "NotAdmitted"

// Condition types and reasons shared by the kinds.
const (
	// ConditionReady is True when the object's world matches its spec.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the operator is moving the world
	// toward the spec.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when something is wrong that the operator
	// cannot fix by itself.
	ConditionDegraded = "Degraded"
	// ConditionStalled is True when the object cannot progress until
	// someone changes it (kstatus reads it as Failed).
	ConditionStalled = "Stalled"
	// ConditionRebalancing is True while a BrokerCluster's partition
	// replicas move to spread evenly over its brokers, or off brokers a
	// scale-in removes.
	ConditionRebalancing = "Rebalancing"
)
