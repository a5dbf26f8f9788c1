// Package raftlog is a broker's Raft log store: Dragonboat's raftio.ILogDB
// as one write-ahead log that every Raft group of the NodeHost appends to.
// A Raft group is a shard here as in the rest of the broker (Dragonboat's
// API calls it a cluster).
//
// It owns the files under the NodeHost's log directory and an in-memory
// index of them: per Raft node its bootstrap record, hard state, snapshot
// records and the location of each live entry. An entry is written once,
// into the log, and read back from there; there is no second copy in a
// key-value store (Dragonboat's default, pebble, copies every entry into a
// memtable and then into its tables, which cost a broker about a third of
// its CPU while producing).
//
// Layout: numbered files, each starting with a header and a checkpoint of
// the whole index. Every SaveRaftState call is one CRC-checked record, made
// durable with one fdatasync that concurrent callers share (group commit).
// When the active file is full, a new one is started with a fresh
// checkpoint; files no live entry points into are then emptied, and the
// few live entries left in mostly dead files (those of quiet Raft groups)
// are copied forward first, so a quiet group does not pin a file forever.
// Emptied files are kept as spares that later files write over: fdatasync
// of a file that does not grow flushes its data alone, where a growing
// file also writes its metadata (with a journal, a journal commit). A
// record's CRC is masked with its file's number, so the records a file
// held in its earlier life are not valid in the next. Opening replays the
// newest file's checkpoint and the records after it, up to the first
// record that is torn or not the file's own.
//
// A Raft group given a frame log (OpenFramed: the broker's partitions) has
// its entries written there instead, made durable side by side with the
// record that names their locations; a replay drops a record whose frames
// a crash tore (OpenFramed). Its state machine serves the batches from the
// same bytes, so each is written once (docs/design/write-once-storage.md).
// A small save (SetCopyBytes) copies its frames into its record as well and
// fsyncs the record alone, one fsync in place of two; its frames become
// durable with a later fsync of their file, before any checkpoint drops
// the copies, and a replay writes them again from the copies if a crash
// tore them.
package raftlog
