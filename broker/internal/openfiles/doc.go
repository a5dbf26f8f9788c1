// Package openfiles owns the broker's budget of open files: how many
// partition replicas its open-file limit (RLIMIT_NOFILE, which Go raises
// to the hard limit at start) leaves room for, and whether one more may
// start now.
//
// A partition replica keeps files open for its life: its checkpoint, its
// segments and its frame files. A broker that runs out cannot open the
// next frame file, and Dragonboat treats a failed Raft log write as fatal:
// the broker panics. So the broker registers how many replicas fit
// (meta.Broker.MaxReplicas), placement puts no more on it, and a replica
// the budget has no room for now waits instead of starting.
package openfiles
