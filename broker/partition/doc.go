// Package partition owns one Kafka partition's replicated log: the segment
// files of RecordBatch v2 data, the idempotent-producer table and the
// Dragonboat on-disk state machine that applies Raft entries to both.
//
// Everything in Update is deterministic: offsets, leader epochs and producer
// decisions depend only on the entries and the state on disk, never on the
// clock. Time-based retention is decided by the leader at the edge and
// proposed as a DeleteRecords command; so is producer expiration, as an
// offset horizon below which producers are forgotten (the table stays what
// a rebuild from the batches above the horizon gives).
//
// Opening a replica reads only its active segment: each closed segment has
// an index file, and each segment a fold file with the producer table and
// leader epochs of the batches before it (sidecar.go); both are caches,
// checked and read around when missing or stale.
//
// With the broker's frame log (UseFrames, broker/frames), a produced batch
// is not written again: a framed segment records where the Raft log store
// put it and the offset and epoch it was given (framed.go), and reads like
// a segment that holds its batches.
//
// A snapshot names offsets, not records: a replica recovering from one keeps
// the committed prefix it has and fetches the rest through a Source (the
// broker's follower fetch from the other replicas), so a replica that was
// down a while copies what it missed, not the whole partition.
package partition
