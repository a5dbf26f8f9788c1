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
//
// # The write-once contract
//
// A frame log has two users, and a file goes only when neither needs it.
// Each holds it through the interface of its side (contract.go): Writer
// for the Raft log store, which finds the frame logs through Logs, and
// Reader for the partition.
//
//   - The Raft log store (raftlog.Store, the writer) appends a group's
//     entries (Append), makes them durable (Sync) before its own record
//     that names their locations, and calls Settle for each file an
//     Append used once those locations are in its index, or were given up:
//     until then the file stays whatever the marks say, since no mark was
//     computed with those frames in view. When Raft compacted its log, it
//     calls ReleaseRaft with the lowest file a live entry is in.
//   - The partition's state machine (partition.StateMachine, the reader,
//     through Reader) keeps each applied batch where the
//     writer put it: the server gives it a Locate that asks the Raft log
//     store where an entry's command lies (raftlog.Store.EntryCommand).
//     It reads batches with ReadAt, calls HoldData before a segment comes
//     to point into a file (a batch saved before the partition's last mark
//     may be applied after it), and ReleaseData with the lowest file its
//     segments point into, computed under the lock its framed appends
//     take, once retention or compaction dropped segments; NoFile when it
//     needs none. SetFileBytes sizes files as the partition's segments.
//
// A release never takes the active file or a file appended to after the
// mark was computed; with both marks at NoFile and nothing unsettled, the
// active file goes too and an empty one takes its place.
package frames
