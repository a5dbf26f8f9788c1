package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeletionPolicy says what happens to the Kafka topic when its Topic is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

const (
	// DeletionPolicyRetain keeps the Kafka topic and its records.
	DeletionPolicyRetain DeletionPolicy = "Retain"
	// DeletionPolicyDelete deletes the Kafka topic.
	DeletionPolicyDelete DeletionPolicy = "Delete"
)

// TopicSpec is a desired Kafka topic.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minInSyncReplicas) || self.minInSyncReplicas <= self.replicationFactor",message="minInSyncReplicas must not exceed replicationFactor"
// +kubebuilder:validation:XValidation:rule="has(self.topicName) == has(oldSelf.topicName) && (!has(self.topicName) || self.topicName == oldSelf.topicName)",message="topicName is immutable"
type TopicSpec struct {
	// ClusterRef names the BrokerCluster that holds the topic.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable"
	ClusterRef ClusterReference `json:"clusterRef"`

	// TopicName is the Kafka topic's name; metadata.name when unset.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=249
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9._-]+$`
	TopicName string `json:"topicName,omitempty"`

	// Partitions is the number of partitions. It can grow, never shrink.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:XValidation:rule="self >= oldSelf",message="partitions cannot decrease"
	Partitions int32 `json:"partitions"`

	// ReplicationFactor is the number of replicas of each partition. A
	// change moves replicas (Kafka's partition reassignment): new ones are
	// placed on the least loaded brokers, on racks the partition's other
	// replicas are not on, and catch up before they count.
	// +kubebuilder:validation:Minimum=1
	ReplicationFactor int32 `json:"replicationFactor"`

	// MinInSyncReplicas is min.insync.replicas: acks=all writes are refused
	// with NOT_ENOUGH_REPLICAS while fewer replicas are live.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinInSyncReplicas *int32 `json:"minInSyncReplicas,omitempty"`

	// Config holds other topic configs, such as retention.ms.
	// +optional
	Config map[string]string `json:"config,omitempty"`

	// DeletionPolicy is Retain (the default) or Delete.
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// TopicStatus is the observed Kafka topic.
type TopicStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// TopicName is the Kafka topic this object manages.
	// +optional
	TopicName string `json:"topicName,omitempty"`
	// TopicID is the topic's id on the brokers.
	// +optional
	TopicID string `json:"topicID,omitempty"`
	// Partitions is the topic's actual partition count; it exceeds
	// spec.partitions when a ConsumerGroup's autoscaler grew the topic.
	// +optional
	Partitions int32 `json:"partitions,omitempty"`
	// ReplicationFactor is the topic's actual replication factor: the
	// fewest replicas any of its partitions has.
	// +optional
	ReplicationFactor int32 `json:"replicationFactor,omitempty"`
	// Replicas lists each partition's replicas, the preferred leader
	// first, with the move under way, if any.
	// +optional
	// +listType=map
	// +listMapKey=partition
	Replicas []PartitionReplicas `json:"replicas,omitempty"`
	// Config is the topic's configs that are not at their defaults.
	// +optional
	Config map[string]string `json:"config,omitempty"`
	// Growth is the ordered growth of the topic's partitions in progress,
	// if any (docs/design/ordered-growth.md): its consumers are held until
	// the groups that consume the topic have read what the old partition
	// count placed.
	// +optional
	Growth *TopicGrowth `json:"growth,omitempty"`
	// LastGrowthLift is how the topic's latest ordered growth ended.
	// +optional
	LastGrowthLift *GrowthLift `json:"lastGrowthLift,omitempty"`
	// Conditions: Ready, with reasons Created, Updated, Reassigning,
	// NotSupported, NotEnoughBrokers, ResourceConflict, ClusterNotReady,
	// BrokerError.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TopicGrowth is an ordered growth in progress.
type TopicGrowth struct {
	// From and To are the partition counts before and after the growth.
	From int32 `json:"from"`
	To   int32 `json:"to"`
	// Phase is Splitting while the old partitions' leaders report their
	// split offsets (clients still see From partitions), then Holding.
	Phase string `json:"phase"`
	// HeldSince is when the growth began to hold its consumers.
	// +optional
	HeldSince *metav1.Time `json:"heldSince,omitempty"`
	// Splits are the old partitions' split offsets, by partition; -1 until
	// reported.
	// +optional
	Splits []int64 `json:"splits,omitempty"`
	// Releases are the offsets every counted group must commit on each old
	// partition before the hold lifts.
	// +optional
	Releases []int64 `json:"releases,omitempty"`
	// DrainingGroups are the groups still short of a release.
	// +optional
	DrainingGroups []string `json:"drainingGroups,omitempty"`
	// Queued counts the later growths that wait for this one.
	// +optional
	Queued int32 `json:"queued,omitempty"`
}

// Phases of a TopicGrowth.
const (
	GrowthSplitting = "Splitting"
	GrowthHolding   = "Holding"
)

// Reasons of a GrowthLift.
const (
	GrowthDrained = "Drained"
	GrowthBound   = "Bound"
)

// GrowthLift is the end of an ordered growth.
type GrowthLift struct {
	// Growth numbers the topic's ordered growths.
	Growth int32 `json:"growth"`
	// Reason is Drained (every counted group read the old partitions) or
	// Bound (raftka.growth.max.hold.ms passed first: a group may read a
	// key out of order).
	Reason string      `json:"reason"`
	Time   metav1.Time `json:"time"`
	// HeldSeconds is how long consumers were held.
	HeldSeconds int64 `json:"heldSeconds"`
}

// PartitionReplicas is a partition's replicas as the brokers report them.
type PartitionReplicas struct {
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	// Adding are replicas a move under way adds, still catching up.
	// +optional
	Adding []int32 `json:"adding,omitempty"`
	// Removing are replicas a move under way removes.
	// +optional
	Removing []int32 `json:"removing,omitempty"`
}

// Ready condition reasons of a Topic.
const (
	ReasonCreated = "Created"
	ReasonUpdated = "Updated"
	// ReasonReassigning: partitions are moving to reach the spec's
	// replication factor.
	ReasonReassigning = "Reassigning"
	// ReasonNotEnoughBrokers: the replication factor exceeds the brokers;
	// nothing moves until there are enough.
	ReasonNotEnoughBrokers = "NotEnoughBrokers"
	ReasonNotSupported     = "NotSupported"
	ReasonResourceConflict = "ResourceConflict"
	ReasonClusterNotReady  = "ClusterNotReady"
	ReasonBrokerError      = "BrokerError"
)

// Topic is a Kafka topic on a BrokerCluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kt,categories=raftka
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Partitions",type=integer,JSONPath=`.status.partitions`
// +kubebuilder:printcolumn:name="RF",type=integer,JSONPath=`.spec.replicationFactor`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Topic struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TopicSpec   `json:"spec,omitempty"`
	Status TopicStatus `json:"status,omitempty"`
}

// KafkaName is the Kafka topic's name.
func (t *Topic) KafkaName() string {
	if t.Spec.TopicName != "" {
		return t.Spec.TopicName
	}
	return t.Name
}

// TopicList is a list of Topics.
//
// +kubebuilder:object:root=true
type TopicList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Topic `json:"items"`
}

func init() {
	register(&Topic{}, &TopicList{})
}
