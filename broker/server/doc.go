// Package server is the Raftka broker: one Dragonboat NodeHost hosting the
// metadata Raft group and this broker's partition replicas, and the Kafka
// protocol listener in front of them.
//
// Network, disk checks and time live here, at the edges; the replicated
// state machines in packages meta and partition stay deterministic. Each
// Kafka API has its own file (api_*.go) with its supported versions at the
// top, registered in one dispatch table (dispatch.go).
//
// It also owns what keeps replicas cheap to run: each partition replica's
// Raft log is trimmed by bytes (raftlogtrim.go), and a replica catching
// up from a snapshot gets the records it lacks from its peers through
// follower fetches (catchup.go).
//
// Who may connect, and what they may do, is package security's: the
// server binds its listeners, runs each connection's SASL session and asks
// its authorizer and quotas.
package server
