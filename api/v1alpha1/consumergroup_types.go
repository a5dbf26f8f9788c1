package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ScaleTargetReference names a workload with the scale subresource.
type ScaleTargetReference struct {
	// APIVersion of the target, such as apps/v1.
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`
	// Kind of the target, such as Deployment.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// Name of the target in the ConsumerGroup's namespace.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// PartitionScaling lets the autoscaler grow the topics' partitions so that
// every consumer gets one.
type PartitionScaling struct {
	// Enabled turns partition growth on. Growing partitions moves keys to
	// other partitions; ordered growth (the topic config
	// raftka.growth.ordered, on by default) keeps each key's order across
	// it for producers with murmur2 partitioners (docs/autoscaling.md).
	Enabled bool `json:"enabled"`
	// MaxPartitions caps each topic's partitions.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxPartitions *int32 `json:"maxPartitions,omitempty"`
}

// ScalingBehavior holds the stabilization windows.
type ScalingBehavior struct {
	// ScaleUpStabilizationSeconds: scale up to the lowest recommendation
	// of this window. Default 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ScaleUpStabilizationSeconds *int32 `json:"scaleUpStabilizationSeconds,omitempty"`
	// ScaleDownStabilizationSeconds: scale down only to the highest
	// recommendation of this window. Default 300.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ScaleDownStabilizationSeconds *int32 `json:"scaleDownStabilizationSeconds,omitempty"`
}

// ConsumerGroupSpec is a consumer group and how it scales.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas"
type ConsumerGroupSpec struct {
	// ClusterRef names the BrokerCluster.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable"
	ClusterRef ClusterReference `json:"clusterRef"`
	// GroupID is the Kafka consumer group id.
	// +kubebuilder:validation:MinLength=1
	GroupID string `json:"groupId"`
	// Topics the group consumes.
	// +kubebuilder:validation:MinItems=1
	Topics []string `json:"topics"`
	// OffsetReset is the consumers' auto.offset.reset: a partition without
	// a committed offset lags by all it holds with earliest (the default),
	// by nothing with latest.
	// +optional
	// +kubebuilder:validation:Enum=earliest;latest
	OffsetReset string `json:"offsetReset,omitempty"`
	// ScaleTargetRef is the consumer workload; without it the group's lag
	// is only reported.
	// +optional
	ScaleTargetRef *ScaleTargetReference `json:"scaleTargetRef,omitempty"`
	// MinReplicas of the target. Default 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas of the target.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// LagThreshold is the lag, in records, one consumer is expected to
	// carry. Default 1000.
	// +optional
	// +kubebuilder:validation:Minimum=1
	LagThreshold *int64 `json:"lagThreshold,omitempty"`
	// ActivationLagThreshold: with minReplicas 0, the target is woken from
	// zero only by a lag above it, and goes back to zero once the lag
	// stayed at or below it for the scale-down window (KEDA's
	// activationLagThreshold). Default 0: any lag wakes it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ActivationLagThreshold *int64 `json:"activationLagThreshold,omitempty"`
	// LimitToPartitionsWithLag caps the consumers at the partitions that
	// have lag: a consumer given only idle partitions would have nothing
	// to do, so a group whose lag sits in a few hot partitions gets as many
	// consumers as those, not as the lag's total asks (KEDA's
	// limitToPartitionsWithLag).
	// +optional
	LimitToPartitionsWithLag bool `json:"limitToPartitionsWithLag,omitempty"`
	// ExcludePersistentLag leaves out of the consumer count the lag of a
	// partition whose committed offset stood still since the last
	// measurement: a consumer stuck on it keeps its lag whatever the
	// consumer count (KEDA's excludePersistentLag).
	// +optional
	ExcludePersistentLag bool `json:"excludePersistentLag,omitempty"`
	// PartitionScaling lets the autoscaler grow partitions with consumers.
	// +optional
	PartitionScaling *PartitionScaling `json:"partitionScaling,omitempty"`
	// Behavior holds the stabilization windows.
	// +optional
	Behavior *ScalingBehavior `json:"behavior,omitempty"`
}

// PartitionLag is one partition's lag.
type PartitionLag struct {
	Partition int32 `json:"partition"`
	// Committed is the group's committed offset; -1 when none.
	Committed int64 `json:"committed"`
	// End is the partition's end offset.
	End int64 `json:"end"`
	// Lag is End minus Committed (End minus the start for no commit).
	Lag int64 `json:"lag"`
}

// TopicLag is one topic's lag.
type TopicLag struct {
	Topic string `json:"topic"`
	Lag   int64  `json:"lag"`
	// +optional
	Partitions []PartitionLag `json:"partitions,omitempty"`
}

// ConsumerGroupStatus is the observed group.
type ConsumerGroupStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// TotalLag over all topics.
	// +optional
	TotalLag int64 `json:"totalLag,omitempty"`
	// Topics' lag.
	// +optional
	Topics []TopicLag `json:"topics,omitempty"`
	// State of the group on its coordinator (Stable, Empty, ...).
	// +optional
	State string `json:"state,omitempty"`
	// Members in the group.
	// +optional
	Members int32 `json:"members,omitempty"`
	// CurrentReplicas of the scale target.
	// +optional
	CurrentReplicas int32 `json:"currentReplicas,omitempty"`
	// DesiredReplicas the autoscaler computed.
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`
	// Partitions is the smallest partition count among the topics.
	// +optional
	Partitions int32 `json:"partitions,omitempty"`
	// LastScaleTime is when the autoscaler last changed the target or the partitions.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
	// LastScaleReason says why.
	// +optional
	LastScaleReason string `json:"lastScaleReason,omitempty"`
	// Conditions: Ready, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConsumerGroup is a Kafka consumer group whose lag is reported and,
// with a scale target, scaled on.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kcg,categories=raftka
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.groupId`
// +kubebuilder:printcolumn:name="Lag",type=integer,JSONPath=`.status.totalLag`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.currentReplicas`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ConsumerGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ConsumerGroupSpec   `json:"spec,omitempty"`
	Status ConsumerGroupStatus `json:"status,omitempty"`
}

// ConsumerGroupList is a list of ConsumerGroups.
//
// +kubebuilder:object:root=true
type ConsumerGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConsumerGroup `json:"items"`
}

func init() {
	register(&ConsumerGroup{}, &ConsumerGroupList{})
}
