// Package replica owns this broker's partition replicas through their
// lives (Manager): starting and stopping them as the metadata places them,
// their Raft groups' membership, forced recovery from the last intact
// replica, catch-up from peers after a snapshot, which followers are in
// sync, the Raft log's trim by bytes, retention and compaction,
// replication throttling, leadership (reported, balanced, handed back to
// the preferred replica), waking quiet groups whose peers changed, and
// leadership's hand-off at shutdown. Each concern runs
// a loop of its own, started by Manager.Start.
//
// It takes its dependencies explicitly (Config, Deps: the metadata, the
// Raft node host, liveness, a way to propose metadata commands) and
// answers the rest of the broker through named questions (api.go); the
// partition state machines it hosts (package partition) never import it.
package replica
