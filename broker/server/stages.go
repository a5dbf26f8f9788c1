package server

// The stages of an acknowledged produce that the partition leader's
// connection and request handler time, as raftka_produce_stage_seconds
// reports them (docs/design/latency.md); they add up to the leader's part
// of a produce's latency. The storage work inside commit is timed on every
// broker that holds a replica (package node's stages).
const (
	// stageRead: the request's size read off the socket, to its handler
	// beginning (the body's transfer, which a large request spreads over
	// many reads, its decoding and the connection's admission checks).
	// The time a request waits in the socket before its size is read is
	// not in it: the kernel does not say when bytes arrived.
	stageRead = "read"
	// stagePropose: the request's handler began, to every partition's
	// batches queued in its Raft group (validation, recompression,
	// waiting out a full proposal queue).
	stagePropose = "propose"
	// stageCommit: queued, to the last partition's result (the leader's
	// log write, replication, a majority's fsync, commit and apply).
	stageCommit = "commit"
	// stageCommitSpread: of a request for several partitions, the first
	// partition's result to the last's: how far apart its groups commit.
	stageCommitSpread = "commit_spread"
	// stageRespond: the results, to the response written to the socket,
	// behind the connection's earlier responses.
	stageRespond = "respond"
)
