// Package throttle decides the replication throttle the operator sets
// while replicas catch up (a rebalance's moves, a replaced volume): the
// bytes per second each broker's new replicas may copy. It owns the rule
// only; the BrokerCluster controller measures and applies. Decide is a
// pure function of the measurement and the previous state, so each rule is
// table-tested with latency series.
package throttle
