// Package frames owns the files that hold one partition's Raft entries, so
// that a produced batch is written once per replica: the Raft log store
// (broker/raftlog) appends the entries of a partition's Raft group here and
// keeps only their locations in its shared log, and the partition's state
// machine serves the committed batches from the same bytes
// (docs/design/write-once-storage.md).
//
// A file is a run of frames: a 4-byte payload length, a 4-byte CRC-32C of
// the payload, and the payload (a marshaled Raft entry). Frames are only
// appended; a frame that Raft later replaces stays, dead, until its file
// goes, because the last durable record of the shared log may still name
// it. Opening finds each file's end at its first torn frame: nothing after
// a torn frame was made durable by a Sync that returned.
package frames
