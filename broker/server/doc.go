// Package server is the Raftka broker's Kafka front door: the listeners
// (server.go), their connections (conn.go: one reader and one writer per
// connection, answers in request order), and the handlers that answer the
// protocol, one file per API key (api_*.go) with its supported versions at
// the top, registered in one dispatch table (dispatch.go). Helpers that
// several handlers share have files of their own (coordinator.go,
// admin.go, admintimeout.go, topics.go, configs.go, lookup.go,
// authorizer.go, quotas.go, stages.go); the Kafka error an error carries
// is package internal/kafkaerr's rule.
//
// The handlers answer from the parts in Deps, which the composition root
// (package node) builds and hands over: the metadata's named queries
// (package meta), the partition replicas (package replica), the group
// coordinator (package groups), liveness and the metadata quorum (package
// cluster), authentication, ACLs and quotas (package security), and a
// small Raft interface for proposals. No handler reaches the Broker.
package server
