// Package durable holds the two system calls that make writes survive a
// crash, shared by the broker's storage packages (raftlog, frames,
// partition).
package durable
