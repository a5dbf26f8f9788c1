package node

import (
	_ "unsafe" // for go:linkname
)

// Dragonboat v3 sizes every Raft group's queues from "soft settings" that it
// copies into package variables at init, overridable only by a JSON file in
// the process's working directory. The defaults (2,048 queued proposals and
// 1,024 received messages per group, in 16 shards) cost about 1.5 MB per
// partition replica, which a broker hosting ten thousand replicas cannot
// afford. The variables are set here instead, before any group starts;
// go.mod pins Dragonboat to v3.3.8, whose names and types these match.
//
// Each queue is two arrays allocated whole when the group starts, so its
// length is memory every idle replica holds: a received message is 280
// bytes, an entry 80. A heap profile at 1,000 idle replicas
// (BenchmarkIdlePartitions with RAFTKA_BENCH_PROFILES) had 139 KB per
// replica in receive queues of 256, 41 KB in proposal queues of 256, 38 KB
// in the in-memory log's entry slice (512 entries, which Dragonboat
// allocates afresh when a group goes quiet) and 20 KB in the random
// sources of 4 proposal shards.

//go:linkname incomingProposalsMaxLen github.com/lni/dragonboat/v3.incomingProposalsMaxLen
var incomingProposalsMaxLen uint64

//go:linkname incomingReadIndexMaxLen github.com/lni/dragonboat/v3.incomingReadIndexMaxLen
var incomingReadIndexMaxLen uint64

//go:linkname receiveQueueLen github.com/lni/dragonboat/v3.receiveQueueLen
var receiveQueueLen uint64

//go:linkname pendingProposalShards github.com/lni/dragonboat/v3.pendingProposalShards
var pendingProposalShards uint64

//go:linkname entrySliceSize github.com/lni/dragonboat/v3/internal/raft.entrySliceSize
var entrySliceSize uint64

//go:linkname minEntrySliceSize github.com/lni/dragonboat/v3/internal/raft.minEntrySliceSize
var minEntrySliceSize uint64

func init() {
	// The step worker drains a group's queues at every pass, a millisecond
	// or so apart under load. Between two passes a partition takes one
	// proposal per produce request that names it, and a follower one
	// append and one heartbeat per leader pass: 64 is far above either. A
	// full proposal queue answers ErrSystemBusy, which the produce path
	// retries; a dropped message is sent again by Raft.
	incomingProposalsMaxLen = 64
	incomingReadIndexMaxLen = 64
	receiveQueueLen = 64
	// One shard: a partition's proposals come from the produce path's few
	// goroutines, not the hundreds the shards spread a lock for.
	pendingProposalShards = 1
	// The in-memory log grows by append past this when a burst needs it;
	// a new slice is made when fewer than minEntrySliceSize slots are free.
	entrySliceSize = 64
	minEntrySliceSize = 16
}
