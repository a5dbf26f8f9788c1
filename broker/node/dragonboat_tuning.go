package node

import (
	_ "unsafe" // for go:linkname
)

// Dragonboat v3 sizes every Raft group's queues from "soft settings" that it
// copies into package variables at init, overridable only by a JSON file in
// the process's working directory. The defaults (2,048 queued proposals and
// 1,024 received messages per group, in 16 shards) cost about 1.5 MB per
// partition replica, which a broker hosting a thousand replicas cannot
// afford. The variables are set here instead, before any group starts;
// go.mod pins Dragonboat to v3.3.8, whose names and types these match.

//go:linkname incomingProposalsMaxLen github.com/lni/dragonboat/v3.incomingProposalsMaxLen
var incomingProposalsMaxLen uint64

//go:linkname incomingReadIndexMaxLen github.com/lni/dragonboat/v3.incomingReadIndexMaxLen
var incomingReadIndexMaxLen uint64

//go:linkname receiveQueueLen github.com/lni/dragonboat/v3.receiveQueueLen
var receiveQueueLen uint64

//go:linkname pendingProposalShards github.com/lni/dragonboat/v3.pendingProposalShards
var pendingProposalShards uint64

func init() {
	// A partition sees at most a few dozen produce requests in flight; a
	// full queue answers ErrSystemBusy, which the produce path retries.
	incomingProposalsMaxLen = 256
	incomingReadIndexMaxLen = 64
	receiveQueueLen = 256
	pendingProposalShards = 4
}
