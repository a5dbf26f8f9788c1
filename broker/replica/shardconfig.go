package replica

import dbconfig "github.com/lni/dragonboat/v3/config"

// ElectionRTT is the election timeout in RTTs; Dragonboat draws each
// follower's from [ElectionRTT, 2*ElectionRTT), so at the default 50 ms a
// dead leader is replaced within 0.5-1 s (a split vote adds another), while
// 5 heartbeats fit in the shortest timeout: a leader is not deposed for a
// few late ones while its disk is busy.
const ElectionRTT = 10

// ShardConfig is the Raft configuration of a group: the metadata group's or,
// through partitionShardConfig, a partition's.
func ShardConfig(shard, node uint64, snapshotEntries uint64) dbconfig.Config {
	return dbconfig.Config{
		NodeID:              node,
		ClusterID:           shard,
		ElectionRTT:         ElectionRTT,
		HeartbeatRTT:        2,
		CheckQuorum:         true,
		SnapshotEntries:     snapshotEntries,
		CompactionOverhead:  snapshotEntries / 2,
		OrderedConfigChange: true,
	}
}

// partitionShardConfig is ShardConfig for a partition group. Dragonboat's
// compaction after each log compaction (see raftLogTrimmer) would force
// the log store to flush its memtable to disk tables, entries that are
// about to be deleted included; the store's background compactions reclaim
// the deleted ranges instead.
func partitionShardConfig(shard, node uint64, snapshotEntries uint64) dbconfig.Config {
	cfg := ShardConfig(shard, node, snapshotEntries)
	cfg.DisableAutoCompactions = true
	return cfg
}
