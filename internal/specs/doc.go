// Package specs builds the Kubernetes objects a BrokerCluster owns - the
// ConfigMap, the headless and client Services, the StatefulSet and the
// PodDisruptionBudget - as pure functions of the cluster, and names them.
// The controllers create and patch what these return.
package specs
