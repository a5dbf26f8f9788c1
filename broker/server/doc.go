// Package server is, for now, the Raftka broker's composition root and its
// Kafka front door: Broker builds the broker's parts and starts them
// (broker.go: Start is a list of named steps, startLoops the loops), and the
// Kafka listener serves the protocol in front of them, one file per API key
// (api_*.go) with its supported versions at the top, registered in one
// dispatch table (dispatch.go). Helpers that several handlers share have
// files of their own (coordinator.go, errors.go, admin.go, topics.go,
// configs.go, lookup.go, authorizer.go, quotas.go).
//
// The replica lifecycle still lives here too: each partition replica's
// start and stop (replicas.go), its Raft group's membership (membership.go),
// forced recovery (recovery.go), catch-up from a snapshot through follower
// fetches (catchup.go), in-sync tracking (insync.go), the Raft log's trim by
// bytes (raftlogtrim.go), retention and compaction (retention.go,
// logcleaner.go), replication throttling (throttle.go), leadership
// (leaderevents.go, leaders.go) and the controlled shutdown (shutdown.go).
//
// The rest has moved out into rooms of its own, each taking what it needs
// explicitly: package security (listeners, TLS, SASL, ACLs, quotas),
// package cluster (liveness, the metadata quorum, this broker's
// incarnation, peer HTTP), and package meta's named queries for every read
// of the metadata. Network, disk checks and time live at these edges; the
// replicated state machines in packages meta and partition stay
// deterministic and never import the server side.
package server
