// Package offsetstopic serves Kafka's internal __consumer_offsets topic,
// read-only, from the consumer-group state the metadata group holds
// (meta/offsetstopic.go): it encodes the live records as Kafka's record
// batches, keys and values in the versions Kafka writes, and it records
// each group's membership from this broker's coordinator as Kafka's
// coordinator writes it, when a rebalance completes or the group empties.
// Tools that follow groups by reading the topic, Burrow among them, work
// unchanged.
package offsetstopic
