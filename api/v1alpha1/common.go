package v1alpha1

// ClusterReference names a BrokerCluster in the same namespace.
type ClusterReference struct {
	// Name of the BrokerCluster.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

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
