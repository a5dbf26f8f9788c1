// Package raftnet owns the connections that carry Raft messages and
// snapshot chunks between brokers: the transport a broker's Dragonboat
// NodeHost uses (config.ExpertConfig.TransportFactory).
//
// It speaks the frames of Dragonboat's own TCP transport, so a broker that
// runs it and one that runs Dragonboat's talk to each other (a rolling
// upgrade across the change keeps its quorums). A frame is a 2-byte magic
// number (0xAE 0x7D), an 18-byte header (the method, 100 for a Raft message
// batch and 200 for a snapshot chunk, as a big-endian uint16; the payload's
// size as a uint64; the header's CRC-32 (IEEE) taken with its own field
// zeroed; the payload's CRC-32, or 0 under mutual TLS, whose records carry
// their own check) and the payload, a marshaled raftpb.MessageBatch or
// raftpb.Chunk. A snapshot stream ends with the 2-byte poison number (0 0),
// answered with the same two bytes.
//
// What differs is the cost per frame, which is what a record at one in
// flight pays eight times over (docs/design/latency.md): Dragonboat's
// transport writes a frame with three system calls (magic, header,
// payload) and reads it with at least three, each a wake-up of the reading
// goroutine when the parts arrive apart. Here a frame is written with one
// write and read through a buffer, so a frame that arrives whole is read
// with one system call.
//
// A peer's bytes are checked before they are trusted: the magic number, the
// header's CRC, the method, a payload size of at most MaxPayloadBytes and
// the payload's CRC; a frame that fails any of them closes its connection
// (the sender dials again), and the rest of the transport serves on.
package raftnet
