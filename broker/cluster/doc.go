// Package cluster owns this broker's place among the others: its
// incarnation (Incarnation: the identity in its data directory, settled
// before any Raft group starts, joined through the other brokers when the
// directory is empty, registered in the metadata), which brokers answer
// (Liveness, asking each one's Raft transport for an answer), the
// metadata group's voters and their changes as Kafka's dynamic quorum
// makes them (Quorum:
// KIP-853's AddRaftVoter, RemoveRaftVoter and DescribeQuorum), and how
// brokers call each other's HTTP endpoint, over the Raft CA's TLS when the
// brokers have one (PeerHTTP).
//
// It takes the metadata, the Raft node host and a way to propose metadata
// commands as explicit dependencies, never the broker.
package cluster
