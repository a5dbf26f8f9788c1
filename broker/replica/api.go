package replica

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/partition"
)

// The named questions and requests the rest of the broker (the Kafka
// front door, the HTTP endpoints, the composition root) puts to the
// replica lifecycle.

// StateMachine is the replica's partition state machine.
func (r *Replica) StateMachine() *partition.StateMachine { return r.sm }

// Node is the replica's Raft node.
func (r *Replica) Node() uint64 { return r.node }

// Replica is this broker's replica of a partition's Raft group, or nil.
func (b *Manager) Replica(shard uint64) *Replica { return b.replicas.get(shard) }

// NotStartedOnDisk counts the replicas the metadata places on this broker
// that have their data here but are not running: a restarting broker's,
// until it starts them. A replica that is new here is not counted: it is
// being added to its group, which does not make the broker unready.
func (b *Manager) NotStartedOnDisk() int {
	n := 0
	for shard, p := range b.replicas.desired() {
		if b.replicas.get(shard) == nil && b.nh.HasNodeInfo(shard, p.node) {
			n++
		}
	}
	return n
}

// Shards are the groups this broker hosts a replica of.
func (b *Manager) Shards() []uint64 { return b.replicas.shards() }

// Count is how many replicas this broker hosts.
func (b *Manager) Count() int { return b.replicas.count() }

// WaitingForFiles is how many placed replicas have not started for want
// of open files (package openfiles).
func (b *Manager) WaitingForFiles() int { return int(b.replicas.waiting.Load()) }

// PartitionLog is the log of this broker's replica of shard, false if it
// holds none.
func (b *Manager) PartitionLog(shard uint64) (*partition.Log, bool) {
	r := b.replicas.get(shard)
	if r == nil {
		return nil, false
	}
	return r.sm.Log(), true
}

// IsLeader tells whether this broker's node leads a group.
func (b *Manager) IsLeader(shard uint64) bool { return b.isLeader(shard) }

// Term is the latest term this broker saw a group's leader in.
func (b *Manager) Term(shard uint64) int32 { return b.leaders.term(shard) }

// ErrDeposed is why a proposal made as a group's leader was given up: this
// broker stopped leading the group (Deposed), and what it had pending
// commits only if the new leader got it.
var ErrDeposed = errors.New("this broker stopped leading the Raft group")

// Deposed is closed once this broker stops leading shard, if it leads it
// now; nil otherwise.
func (b *Manager) Deposed(shard uint64) <-chan struct{} { return b.leaders.deposed(shard) }

// LeadershipsWon counts the leaderships this broker took.
func (b *Manager) LeadershipsWon() int64 { return b.leaders.won.Load() }

// InSyncReplicas are those of a partition's replicas that are in sync
// with this broker, its leader.
func (b *Manager) InSyncReplicas(shard uint64, replicas []int32) []int32 {
	return b.inSyncReplicas(shard, replicas)
}

// Electing tells whether a group is within its grace for electing a
// leader after a change this broker saw.
func (b *Manager) Electing(shard uint64, now time.Time) bool { return b.members.electing(shard, now) }

// WithoutLeader counts the hosted groups without a leader past their
// grace.
func (b *Manager) WithoutLeader(now time.Time) int { return b.members.withoutLeader(now) }

// MemberChanges counts the membership changes this broker made as leader.
func (b *Manager) MemberChanges() int64 { return b.members.changes.Load() }

// WaitLeaderThrottle waits until this broker may serve n more bytes to
// replicas catching up (leader.replication.throttled.rate).
func (b *Manager) WaitLeaderThrottle(ctx context.Context, n int) error {
	return b.throttle.waitLeader(ctx, n)
}

// ForceRecovery recovers a partition from its last intact replica
// (ElectLeaders, unclean).
func (b *Manager) ForceRecovery(ctx context.Context, topic string, index int32) (*kerr.Error, string) {
	return b.recoveries.force(ctx, topic, index)
}

// PeerClient is a Kafka client to another broker's inter-broker listener.
func (b *Manager) PeerClient(id int32) (*kgo.Client, error) { return b.peers.client(id) }

// HandleReplica answers GET /internal/replica: this broker's replica of a
// partition, for a forced recovery.
func (b *Manager) HandleReplica(w http.ResponseWriter, r *http.Request) { b.handleReplica(w, r) }

// HandOffLeadership hands the leadership of the groups this broker leads
// to other in-sync voters, within bound.
func (b *Manager) HandOffLeadership(bound time.Duration) { b.handOffLeadership(bound) }

// HandBackNewPartition hands a new partition's leadership to its
// preferred replica once it is live.
func (b *Manager) HandBackNewPartition(shard uint64) { leadership{b}.handBackNewPartition(shard) }

// SnapshotListsVoter reports whether the latest snapshot of a node lists
// it as a voter.
func (b *Manager) SnapshotListsVoter(shard, node uint64) bool {
	return b.snapshotListsVoter(shard, node)
}

// Observer tells whether the replica's node is a non-voting observer, as
// last seen.
func (r *Replica) Observer() bool { return r.observer.Load() }
