// Package server is, for now, the Raftka broker's composition root and its
// Kafka front door. Broker builds the broker's parts and starts them
// (broker.go: Start is a list of named steps, startLoops the loops that
// are not a part's own), and the Kafka listener serves the protocol in
// front of them, one file per API key (api_*.go) with its supported
// versions at the top, registered in one dispatch table (dispatch.go).
// Helpers that several handlers share have files of their own
// (coordinator.go, errors.go, admin.go, topics.go, configs.go, lookup.go,
// authorizer.go, quotas.go).
//
// The rooms it composes each own one concern and its loops, and take what
// they need explicitly: package replica (the partition replicas'
// lifecycle), package cluster (liveness, the metadata quorum, this
// broker's incarnation, peer HTTP), package security (listeners, TLS,
// SASL, ACLs, quotas), and package meta's named queries for every read of
// the metadata. Network, disk checks and time live at these edges; the
// replicated state machines in packages meta and partition stay
// deterministic and never import the server side.
package server
