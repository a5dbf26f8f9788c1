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
// And who may connect: named Kafka listeners (listeners.go), each
// PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; TLS from PEM files that are
// read again when they change (tls.go); SASL with SCRAM, whose exchange is
// ours (scram.go), and PLAIN, checked against the SCRAM credentials the
// metadata group keeps (sasl.go).
package server
