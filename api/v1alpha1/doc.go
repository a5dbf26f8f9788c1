// Package v1alpha1 holds the raftka.io/v1alpha1 API: BrokerCluster (the
// brokers' StatefulSet, Services, PodDisruptionBudget and configuration),
// Topic (a Kafka topic declared as a Kubernetes object) and ConsumerGroup
// (a consumer group's lag and the policy that scales it).
//
// +kubebuilder:object:generate=true
// +groupName=raftka.io
package v1alpha1
