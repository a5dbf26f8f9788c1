// Package cluster owns this broker's view of the other brokers: which of
// them answer (Liveness, probing each one's Raft address), the metadata
// group's voters and their changes as Kafka's dynamic quorum makes them
// (Quorum: KIP-853's AddRaftVoter, RemoveRaftVoter and DescribeQuorum),
// and how brokers call each other's HTTP endpoint, over the Raft CA's TLS
// when the brokers have one (PeerHTTP).
//
// It takes the metadata and the Raft node host as explicit dependencies,
// never the broker.
package cluster
