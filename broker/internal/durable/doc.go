// Package durable holds the system calls that make writes survive a
// crash, and the gathered write that puts a frame's parts on disk without
// copying them together, shared by the broker's storage packages
// (raftlog, frames, partition).
package durable
