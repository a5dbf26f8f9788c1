package server

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/internal/volume"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
	"github.com/raftka/raftka/broker/replica"
)

// partitionInfo is the metadata's view of a partition, with its
// compression codec and the leader as this broker sees it now.
type partitionInfo struct {
	meta.PartitionView
	codec kgo.CompressionCodecType // compression.type; partition.CodecProducer keeps the producer's
}

// partitionFor looks a partition up in the metadata.
func (srv *Server) partitionFor(topic string, index int32) (partitionInfo, *kerr.Error) {
	view, ok := srv.Meta.PartitionView(topic, index)
	if !ok {
		return partitionInfo{}, kerr.UnknownTopicOrPartition
	}
	info := partitionInfo{PartitionView: view, codec: partition.CodecProducer} // validated on the way in; never guess a codec
	if codec, ok := partition.TopicCodec(view.Compression); ok {
		info.codec = codec
	}
	info.Leader, info.LeaderEpoch = srv.currentLeader(view)
	return info, nil
}

// currentLeader prefers this broker's own view of a shard it hosts, which is
// fresher than the metadata's record. When its replica knows no leader, the
// group lost its quorum, or this broker is cut off from the replicas that
// still have one; it cannot tell which, so it names the leader last
// recorded. If that is this broker, it stands in at that epoch: it serves
// the committed records and answers produce with NOT_ENOUGH_REPLICAS, which
// tells a client more than LEADER_NOT_AVAILABLE, its Metadata tells clients
// to ask again (metadataTopic), and a client that learned a new leader's
// later epoch elsewhere keeps that leader. It never stands in
// for a partition another broker led: cut off from the others, it would
// draw clients away from leaders that still work (the network partition
// test saw every partition move to the cut-off broker), and its stale reads
// would give them no error to make them look again.
//
// A leader recorded by an incarnation its broker has since replaced (it
// came back on an empty disk) is named by no one: no replica of it holds
// the partition's records, so clients are told the leader is not
// available, as for a lost quorum.
func (srv *Server) currentLeader(info meta.PartitionView) (int32, int32) {
	if srv.Replicas.Replica(info.Shard) != nil {
		if id, ok, err := srv.Raft.GetLeaderID(info.Shard); err == nil && ok && id != 0 {
			return meta.BrokerOfNode(id), max(srv.Replicas.Term(info.Shard), info.LeaderEpoch)
		}
		if info.LeaderReplaced {
			return -1, info.LeaderEpoch
		}
		return info.Leader, info.LeaderEpoch
	}
	if info.LeaderReplaced {
		return srv.standIn(info), info.LeaderEpoch
	}
	if srv.Liveness.IsLive(info.Leader) {
		return info.Leader, info.LeaderEpoch
	}
	return srv.standIn(info), info.LeaderEpoch
}

// standIn names, for a partition this broker does not host whose leader it
// does not see live, a replica it does see live, or -1; that replica
// answers for itself.
func (srv *Server) standIn(info meta.PartitionView) int32 {
	for _, id := range info.Replicas {
		if srv.Liveness.IsLive(id) {
			return id
		}
	}
	return -1
}

// leaderReplica returns the local replica if this broker leads the
// partition, else the error a client should see.
func (srv *Server) leaderReplica(topic string, index int32) (*replica.Replica, partitionInfo, *kerr.Error) {
	return srv.actingReplica(topic, index, false)
}

// actingReplica is leaderReplica that also accepts this broker standing in
// for a leaderless partition, for reads of committed records.
func (srv *Server) actingReplica(topic string, index int32, standIn bool) (*replica.Replica, partitionInfo, *kerr.Error) {
	info, err := srv.partitionFor(topic, index)
	if err != nil {
		return nil, info, err
	}
	if info.Hidden {
		return nil, info, kerr.UnknownTopicOrPartition // an ordered growth not shown to clients yet
	}
	rep := srv.Replicas.Replica(info.Shard)
	if rep == nil {
		return nil, info, kerr.NotLeaderForPartition
	}
	if srv.Replicas.IsLeader(info.Shard) {
		return rep, info, nil
	}
	if standIn && info.Leader == srv.cfg.ID && !info.LeaderReplaced {
		return rep, info, nil
	}
	return rep, info, kerr.NotLeaderForPartition
}

// hostedReplica is this broker's replica of a partition, leader or not.
func (srv *Server) hostedReplica(topic string, index int32) (*replica.Replica, *kerr.Error) {
	info, err := srv.partitionFor(topic, index)
	if err != nil {
		return nil, err
	}
	if rep := srv.Replicas.Replica(info.Shard); rep != nil {
		return rep, nil
	}
	return nil, kerr.NotLeaderForPartition
}

// freeSpace caches statfs: one call per produce would cost more than it saves.
type freeSpace struct {
	mu    sync.Mutex
	at    time.Time
	bytes uint64
}

func (srv *Server) diskFull() bool {
	if srv.cfg.MinFreeBytes <= 0 {
		return false
	}
	srv.free.mu.Lock()
	defer srv.free.mu.Unlock()
	if time.Since(srv.free.at) > time.Second {
		if _, usable, err := srv.volumeBytes(); err == nil {
			srv.free.at, srv.free.bytes = time.Now(), uint64(usable)
		}
	}
	return srv.free.bytes < uint64(srv.cfg.MinFreeBytes)
}

// volumeBytes is the size of the data directory's file system and what of
// it this process may still use.
func (srv *Server) volumeBytes() (total, usable int64, err error) {
	return volume.Bytes(srv.cfg.DataDir)
}

// leaderHint is KIP-951's addition to NOT_LEADER_OR_FOLLOWER: the leader as
// this broker knows it, with its endpoint, so that a client redirects at
// once instead of waiting for a metadata refresh.
type leaderHint struct {
	leader, epoch int32
	host          string
	port          int32
	rack          *string
}

func (srv *Server) leaderHintFor(topic string, index int32, listener string) (leaderHint, bool) {
	info, err := srv.partitionFor(topic, index)
	if err != nil || info.Leader < 0 || info.Leader == srv.cfg.ID {
		return leaderHint{}, false
	}
	h := leaderHint{leader: info.Leader, epoch: info.LeaderEpoch}
	br, found := srv.Meta.Broker(info.Leader)
	if !found {
		return leaderHint{}, false
	}
	h.host, h.port = br.Address(listener)
	if br.Rack != "" {
		h.rack = kmsg.StringPtr(br.Rack)
	}
	return h, true
}
