package frames

// Writer is the Raft log store's side of the write-once contract (see the
// package doc): it appends a group's entries, makes them durable, settles
// the files its appends used, releases what Raft compacted, and reads its
// entries back. *Log implements it.
type Writer interface {
	Append(payloads []Payload) ([]Loc, error)
	Sync() error
	Settle(file uint32)
	ReleaseRaft(below uint32)
	Read(loc Loc) ([]byte, error)
}

// Reader is the partition's side of the contract: it reads the batches
// the writer put there, holds the file a segment comes to point into,
// releases the files its segments no longer point into, and sizes the
// files as its segments. *Log implements it.
type Reader interface {
	ReadAt(file uint32, p []byte, off int64) error
	HoldData(file uint32)
	ReleaseData(below uint32)
	SetFileBytes(n int64)
}

// Logs is how the Raft log store finds the frame logs of the groups that
// keep their entries in one: the broker's partition replicas.
type Logs interface {
	// Writer is the open frame log of a Raft group, or nil if the group
	// keeps its entries in the store itself.
	Writer(shard uint64) Writer
	// Dir is where a node's frame log lies, known before it is opened:
	// the store's replay checks and repairs frames there first.
	Dir(shard, node uint64) string
}

var (
	_ Writer = (*Log)(nil)
	_ Reader = (*Log)(nil)
)
