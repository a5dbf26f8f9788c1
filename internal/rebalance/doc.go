// Package rebalance decides where partition replicas go when a cluster
// changes shape: a topic's replication factor changes, brokers are added,
// or brokers are to be drained before they go. Its functions are pure:
// they read a Layout (the brokers with their racks and every partition's
// replicas, as Kafka's Metadata reports them) and return the replica lists
// to ask for with Kafka's reassignment API; the controllers run them.
//
// The rules are Kafka's rack-aware placement: a partition's replicas on
// distinct racks where there are enough racks, then on the brokers that
// hold the fewest replicas; the first replica of a list (the preferred
// leader) stays where it is unless its broker is drained.
package rebalance
