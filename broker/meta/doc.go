// Package meta owns the cluster metadata kept in the metadata Raft group:
// registered brokers, topics with their partitions' replica placement and
// last known leaders, topic configs, producer-id allocation and committed
// consumer-group offsets.
//
// The State is changed only by Commands applied in Raft order; Apply is a
// pure function of the state, the command and the entry index.
package meta
