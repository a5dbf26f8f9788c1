// Package groups owns classic Kafka consumer-group membership on the group
// coordinator: joins, syncs, heartbeats, leaves, generations, static
// membership and session expiry. Membership is kept in memory on the
// coordinator, as in Kafka, and a coordinator that takes over starts each
// group from the membership the metadata last recorded (load.go), as
// Kafka's loads it from __consumer_offsets. Committed offsets are not kept
// here but in the metadata Raft group, so they outlive a coordinator.
package groups
