package replica

import (
	"sync"
	"sync/atomic"

	"github.com/lni/dragonboat/v3/raftio"

	"github.com/raftka/raftka/broker/meta"
)

// leaderEvents is what Dragonboat's leader events told this broker: the
// latest term of each Raft group (a partition's Kafka leader epoch), the
// groups it leads, each with a channel closed when it stops leading it,
// and the partition leaderships it won, queued for reportLeaders.
type leaderEvents struct {
	mu      sync.Mutex
	terms   map[uint64]uint64 // shard -> latest term seen in a leader event
	leading map[uint64]chan struct{}
	// won counts partition leaderships this broker took, by election or
	// transfer.
	won atomic.Int64
	// out queues the partition leaderships this broker took.
	out chan raftio.LeaderInfo
}

func newLeaderEvents() *leaderEvents {
	return &leaderEvents{terms: map[uint64]uint64{}, leading: map[uint64]chan struct{}{}, out: make(chan raftio.LeaderInfo, 4096)}
}

// observe records one leader event; it runs on Dragonboat's goroutines.
func (l *leaderEvents) observe(info raftio.LeaderInfo) {
	mine := info.LeaderID == info.NodeID && info.LeaderID != 0
	l.mu.Lock()
	if info.Term > l.terms[info.ClusterID] {
		l.terms[info.ClusterID] = info.Term
		if info.ClusterID != meta.MetadataShard && mine {
			l.won.Add(1)
		}
	}
	if ch, leading := l.leading[info.ClusterID]; mine {
		if !leading {
			l.leading[info.ClusterID] = make(chan struct{})
		}
	} else if leading {
		l.stopLeadingLocked(info.ClusterID, ch)
	}
	l.mu.Unlock()
	if info.ClusterID != meta.MetadataShard && mine {
		select {
		case l.out <- info:
		default: // the periodic sweep in reportLeaders catches up
		}
	}
}

// deposed returns a channel that closes once this broker stops leading a
// shard: a leader cut off from its followers steps down when it misses a
// quorum for an election timeout, and the writes it has pending can then
// commit only if a new leader got them. Nil if it does not lead the shard,
// as far as leader events have told.
func (l *leaderEvents) deposed(shard uint64) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leading[shard]
}

// forget drops a partition shard this broker no longer hosts.
func (l *leaderEvents) forget(shard uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ch, ok := l.leading[shard]; ok {
		l.stopLeadingLocked(shard, ch)
	}
}

// stopLeadingLocked tells the waiters on deposed(shard) that this broker
// no longer leads it; mu is held.
func (l *leaderEvents) stopLeadingLocked(shard uint64, ch chan struct{}) {
	close(ch)
	delete(l.leading, shard)
}

// term is the latest Raft term this broker saw for a shard: the Kafka
// leader epoch of a partition.
func (l *leaderEvents) term(shard uint64) int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int32(l.terms[shard])
}
