package replica

import (
	"time"

	dbconfig "github.com/lni/dragonboat/v3/config"
)

// ElectionTimeout is the shortest time a follower waits for its leader
// before it stands for election; Dragonboat draws each follower's from
// [ElectionTimeout, 2*ElectionTimeout), so a dead leader is replaced
// within 0.5-1 s (a split vote adds another), whatever --rtt is.
const ElectionTimeout = 500 * time.Millisecond

// electionRTT is ElectionTimeout in ticks of rtt, and at least 5, so that
// 5 heartbeats fit in the shortest timeout: a leader is not deposed for a
// few late ones while its disk is busy.
func electionRTT(rtt time.Duration) uint64 {
	return max(5, uint64(ElectionTimeout/rtt))
}

// heartbeatRTT is how many ticks apart a leader's heartbeats are.
func heartbeatRTT(rtt time.Duration) uint64 { return max(1, electionRTT(rtt)/5) }

// DefaultRTT is the node host's tick when --rtt does not set it.
const DefaultRTT = 100 * time.Millisecond

// QuietAfter is how long a partition group idles before it goes quiet:
// Dragonboat quiesces a group after ten times twice its election timeout
// in ticks without a proposal, a read or a vote.
func QuietAfter(rtt time.Duration) time.Duration { return 20 * ElectionWait(rtt) }

// ElectionWait is how long an election timeout lasts at rtt, at the least.
func ElectionWait(rtt time.Duration) time.Duration {
	return time.Duration(electionRTT(rtt)) * rtt
}

// ShardConfig is the Raft configuration of a group at the node host's
// rtt: the metadata group's or, through partitionShardConfig, a
// partition's.
func ShardConfig(shard, node uint64, snapshotEntries uint64, rtt time.Duration) dbconfig.Config {
	return dbconfig.Config{
		NodeID:              node,
		ClusterID:           shard,
		ElectionRTT:         electionRTT(rtt),
		HeartbeatRTT:        heartbeatRTT(rtt),
		CheckQuorum:         true,
		SnapshotEntries:     snapshotEntries,
		CompactionOverhead:  snapshotEntries / 2,
		OrderedConfigChange: true,
	}
}

// partitionShardConfig is ShardConfig for a partition group.
//
// Dragonboat's compaction after each log compaction (see raftLogTrimmer)
// would force the log store to flush its memtable to disk tables, entries
// that are about to be deleted included; the store's background
// compactions reclaim the deleted ranges instead.
//
// A partition group goes quiet when idle (Dragonboat's quiesce, see
// quiet.go): no heartbeats, so an idle replica costs a tick and no
// messages. The metadata group never does: it is what liveness, leader
// reports and every broker's view run through.
func partitionShardConfig(shard, node uint64, snapshotEntries uint64, rtt time.Duration) dbconfig.Config {
	cfg := ShardConfig(shard, node, snapshotEntries, rtt)
	cfg.DisableAutoCompactions = true
	cfg.Quiesce = true
	return cfg
}
