package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/lni/dragonboat/v3"
	sm "github.com/lni/dragonboat/v3/statemachine"

	"github.com/raftka/raftka/broker/frames"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
)

// replica is a partition replica hosted by this broker.
type replica struct {
	shard uint64
	sm    *partition.StateMachine
	dir   string
	// frames is the partition's frame log, with --partition-frames.
	frames *frames.Log
	// compaction is owned by Broker.compactRaftLogs.
	compaction logCompaction
}

// replicaSet starts and stops this broker's partition replicas to match the
// placement in the metadata.
type replicaSet struct {
	b       *Broker
	mu      sync.RWMutex
	byShard map[uint64]*replica
	frames  map[uint64]*frames.Log // with --partition-frames
}

func newReplicaSet(b *Broker) *replicaSet {
	return &replicaSet{b: b, byShard: map[uint64]*replica{}, frames: map[uint64]*frames.Log{}}
}

func (r *replicaSet) get(shard uint64) *replica {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byShard[shard]
}

func (r *replicaSet) count() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.byShard)
}

func (r *replicaSet) shards() []uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]uint64, 0, len(r.byShard))
	for s := range r.byShard {
		out = append(out, s)
	}
	return out
}

func (r *replicaSet) run(ctx context.Context) {
	for {
		changed := r.b.meta.Changed()
		r.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-time.After(2 * time.Second):
		}
	}
}

type placement struct {
	members                 map[uint64]string
	segmentBytes, segmentMs int64
}

func (r *replicaSet) reconcile(ctx context.Context) {
	me := r.b.cfg.ID
	desired := map[uint64]placement{}
	r.b.meta.Read(func(s *meta.State) {
		for _, t := range s.Topics {
			for _, p := range t.Partitions {
				members := map[uint64]string{}
				mine := false
				for _, id := range p.Replicas {
					members[nodeID(id)] = s.Brokers[id].RaftAddr
					mine = mine || id == me
				}
				if mine {
					desired[p.Shard] = placement{members: members, segmentBytes: t.Int(meta.ConfigSegmentBytes),
						segmentMs: t.Int(meta.ConfigSegmentMs)}
				}
			}
		}
	})
	for shard, p := range desired {
		if ctx.Err() != nil {
			return
		}
		if rep := r.get(shard); rep != nil {
			// Altered segment configs apply to the segments rolled next.
			rep.sm.SetSegmentLimits(p.segmentBytes, p.segmentMs)
			continue
		}
		if err := r.start(shard, p); err != nil {
			r.b.log.Error("start partition replica failed", "shard", shard, "error", err)
		}
	}
	for _, shard := range r.shards() {
		if _, ok := desired[shard]; !ok {
			r.remove(shard)
		}
	}
}

func (r *replicaSet) start(shard uint64, p placement) error {
	dir := filepath.Join(r.b.cfg.DataDir, "partitions", strconv.FormatUint(shard, 10))
	rep := &replica{shard: shard, dir: dir, sm: partition.NewStateMachine(dir, p.segmentBytes, peerSource{b: r.b, shard: shard}, r.b.log.With("shard", shard))}
	rep.sm.SetSegmentLimits(p.segmentBytes, p.segmentMs)
	if r.b.cfg.PartitionFrames && r.b.raftLog != nil {
		// Before the group starts: the Raft log store asks for the frame
		// log as soon as the group saves or reads an entry.
		fl, err := frames.Open(filepath.Join(dir, "frames"), p.segmentBytes)
		if err != nil {
			return err
		}
		node := nodeID(r.b.cfg.ID)
		rep.frames = fl
		rep.sm.UseFrames(fl, func(index uint64, cmdLen int) (frames.Loc, bool) {
			return r.b.raftLog.EntryCommand(shard, node, index, cmdLen)
		})
		r.mu.Lock()
		r.frames[shard] = fl
		r.mu.Unlock()
	}
	create := func(uint64, uint64) sm.IOnDiskStateMachine { return rep.sm }
	err := r.b.nh.StartOnDiskCluster(toTargets(p.members), false, create, partitionShardConfig(shard, nodeID(r.b.cfg.ID), r.b.cfg.SnapshotEntries))
	if err != nil && !errors.Is(err, dragonboat.ErrClusterAlreadyExist) {
		return err
	}
	r.mu.Lock()
	r.byShard[shard] = rep
	r.mu.Unlock()
	return nil
}

// remove stops a replica whose topic was deleted and deletes its data.
func (r *replicaSet) remove(shard uint64) {
	r.mu.Lock()
	rep := r.byShard[shard]
	delete(r.byShard, shard)
	r.mu.Unlock()
	if rep == nil {
		return
	}
	if err := r.b.nh.StopCluster(shard); err != nil && !errors.Is(err, dragonboat.ErrClusterNotFound) {
		r.b.log.Error("stop partition replica failed", "shard", shard, "error", err)
	}
	r.mu.Lock()
	delete(r.frames, shard)
	r.mu.Unlock()
	if rep.frames != nil {
		rep.frames.Close()
	}
	r.b.leftShard(shard)
	if err := r.b.nh.RemoveData(shard, nodeID(r.b.cfg.ID)); err != nil {
		r.b.log.Warn("remove raft data failed", "shard", shard, "error", err)
	}
	if err := os.RemoveAll(rep.dir); err != nil {
		r.b.log.Warn("remove partition data failed", "shard", shard, "error", err)
	}
	r.b.log.Info("partition replica removed", "shard", shard)
}

// frameLog is the frame log of a partition's Raft group, or nil (the
// Raft log store's Frames).
func (r *replicaSet) frameLog(shard uint64) *frames.Log {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.frames[shard]
}

func (r *replicaSet) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byShard = map[uint64]*replica{}
}

func toTargets(m map[uint64]string) map[uint64]dragonboat.Target {
	out := make(map[uint64]dragonboat.Target, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
