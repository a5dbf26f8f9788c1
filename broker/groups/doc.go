// Package groups owns classic Kafka consumer-group membership on the group
// coordinator: joins, syncs, heartbeats, leaves, generations, static
// membership and session expiry. Membership is soft state kept in memory
// on the coordinator, as in Kafka; committed offsets are not kept here but
// in the metadata Raft group, so they outlive a coordinator.
package groups
