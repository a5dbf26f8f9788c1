package replica

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v3"
	sm "github.com/lni/dragonboat/v3/statemachine"

	"github.com/raftka/raftka/broker/frames"
	"github.com/raftka/raftka/broker/internal/openfiles"
	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
)

// Replica is a partition replica hosted by this broker.
type Replica struct {
	shard uint64
	// node is the replica's Raft node (meta.Partition.Nodes).
	node uint64
	sm   *partition.StateMachine
	dir  string
	// frames is the partition's frame log, with --partition-frames.
	frames *frames.Log
	// raftLogTrim is owned by raftLogTrimmer.
	raftLogTrim raftLogTrim
	// observer: the replica's node is a non-voting observer, catching up
	// before its promotion (membership.go), as last seen.
	observer atomic.Bool
}

// replicaSet starts and stops this broker's partition replicas to match the
// placement in the metadata.
type replicaSet struct {
	b *Manager
	// lifecycle serializes starting and stopping replicas: reconcile, and
	// a forced recovery's restart of one (recovery.go).
	lifecycle sync.Mutex
	mu        sync.RWMutex
	byShard   map[uint64]*Replica
	frames    map[uint64]*frames.Log // with --partition-frames
	// files is the open-file budget replicas start within; waiting counts
	// those the last reconcile left unstarted for want of files.
	files   openfiles.Budget
	waiting atomic.Int64
}

func newReplicaSet(b *Manager) *replicaSet {
	return &replicaSet{b: b, byShard: map[uint64]*Replica{}, frames: map[uint64]*frames.Log{}, files: openfiles.Current()}
}

func (r *replicaSet) get(shard uint64) *Replica {
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
	// No replica starts before this incarnation's registration is applied
	// here: a broker back on an empty disk replays the metadata from its
	// peers, and until it reaches the join that gave its replicas new Raft
	// nodes it reads the old ones, which it would start as founders on an
	// empty log (a replica of a lost disk under its old node: what
	// docs/design/membership.md forbids; Dragonboat panics on the first
	// heartbeat that commits past it, as a CI run showed).
	select {
	case <-r.b.Registered:
	case <-ctx.Done():
		return
	}
	r.sweepStale()
	// Changes come in bursts (a created topic's partitions each record
	// their first leader): one pass after the burst, not one per change,
	// since each pass reads every placement.
	wait.OnChange(ctx, r.b.Meta.Changed, reconcileCoalesce, 2*time.Second, func() { r.reconcile(ctx) })
}

// reconcileCoalesce is how long a pass waits for more metadata changes.
const reconcileCoalesce = 50 * time.Millisecond

type placement struct {
	// node is this broker's replica's Raft node; founders are the nodes
	// the group was created with, and their addresses.
	node                    uint64
	founders                map[uint64]string
	segmentBytes, segmentMs int64
}

// desired is where the metadata places this broker's replicas, by shard.
func (r *replicaSet) desired() map[uint64]placement {
	me := r.b.cfg.ID
	desired := map[uint64]placement{}
	r.b.Meta.Read(func(s *meta.State) {
		s.EachPartitionOf(me, func(t *meta.Topic, p *meta.Partition) {
			founders := map[uint64]string{}
			for _, n := range p.FounderNodes() {
				br, _ := s.Broker(meta.BrokerOfNode(n))
				founders[n] = br.RaftAddr
			}
			desired[p.Shard] = placement{node: p.NodeOf(me), founders: founders, segmentBytes: t.Int(meta.ConfigSegmentBytes),
				segmentMs: t.Int(meta.ConfigSegmentMs)}
		})
	})
	return desired
}

func (r *replicaSet) reconcile(ctx context.Context) {
	r.lifecycle.Lock()
	defer r.lifecycle.Unlock()
	desired := r.desired()
	// Counted once a pass, and only in a pass that starts a replica, since
	// a count reads a directory entry per file; 0 without /proc, where
	// only the placement limit guards.
	open, counted := 0, false
	waiting := 0
	for shard, p := range desired {
		if ctx.Err() != nil {
			return
		}
		if rep := r.get(shard); rep != nil && rep.node == p.node {
			// Altered segment configs apply to the segments rolled next.
			rep.sm.SetSegmentLimits(p.segmentBytes, p.segmentMs)
			continue
		} else if rep != nil {
			// The replica was moved away and back: its old node left the
			// group, and what it held goes with it.
			r.remove(shard)
		}
		if !counted {
			open, _ = openfiles.Open()
			counted = true
		}
		if !r.files.RoomForReplica(open) {
			waiting++
			continue
		}
		if err := r.start(shard, p); err != nil {
			r.b.Log.Error("start partition replica failed", "shard", shard, "error", err)
		}
		open += openfiles.PerReplica
	}
	r.noteWaiting(waiting, open)
	for _, shard := range r.shards() {
		if _, ok := desired[shard]; !ok {
			r.remove(shard)
		}
	}
}

// replicaDir is where a partition replica's node keeps its data: nodes of
// epoch 0, from before epochs, in the shard's directory, later ones in a
// directory of their own, so that a replica moved away and back, or
// replaced after a lost disk, never opens an older node's files.
func (r *replicaSet) replicaDir(shard, node uint64) string {
	return replicaDir(r.b.cfg.DataDir, shard, node)
}

func replicaDir(dataDir string, shard, node uint64) string {
	name := strconv.FormatUint(shard, 10)
	if e := meta.EpochOfNode(node); e != 0 {
		name += "." + strconv.FormatUint(uint64(e), 10)
	}
	return filepath.Join(dataDir, "partitions", name)
}

// framesDir is where a partition replica's node keeps its frame log.
func framesDir(dataDir string, shard, node uint64) string {
	return filepath.Join(replicaDir(dataDir, shard, node), "frames")
}

// startsAsObserver reports whether a replica's node starts as a
// non-voting observer: a node that joined its group by a membership
// change, until its own latest snapshot lists it as a voter
// (snapshotListsVoter). With the pebble Raft log store, whose snapshots
// the broker cannot read, replicas join as voters (membership.go).
func (r *replicaSet) startsAsObserver(shard, node uint64, founder bool) bool {
	if founder || r.b.raftLog == nil {
		return false
	}
	return !r.b.snapshotListsVoter(shard, node)
}

// snapshotListsVoter reports whether the latest snapshot of a node's
// group in the Raft log store lists the node as a voter. Dragonboat
// restarts a node in the role its config gives and replays the membership
// changes after its snapshot, its own addition as an observer among them,
// which it refuses to apply to a voter; a promotion replayed on an
// observer makes it a voter; but an observer whose snapshot already lists
// it as a voter stays an observer that never votes.
func (b *Manager) snapshotListsVoter(shard, node uint64) bool {
	if b.raftLog == nil {
		return false
	}
	snaps, err := b.raftLog.ListSnapshots(shard, node, math.MaxUint64)
	if err != nil || len(snaps) == 0 {
		return false
	}
	latest := snaps[0]
	for _, ss := range snaps {
		if ss.Index > latest.Index {
			latest = ss
		}
	}
	_, voter := latest.Membership.Addresses[node]
	return voter
}

func (r *replicaSet) start(shard uint64, p placement) error {
	node := p.node
	dir := r.replicaDir(shard, node)
	rep := &Replica{shard: shard, node: node, dir: dir, sm: partition.NewStateMachine(dir, p.segmentBytes, peerSource{b: r.b, shard: shard}, r.b.Log.With("shard", shard))}
	rep.sm.SetSegmentLimits(p.segmentBytes, p.segmentMs)
	if r.b.cfg.PartitionFrames && r.b.raftLog != nil {
		// Before the group starts: the Raft log store asks for the frame
		// log as soon as the group saves or reads an entry.
		fl, err := frames.Open(framesDir(r.b.cfg.DataDir, shard, node), p.segmentBytes)
		if err != nil {
			return err
		}
		rep.frames = fl
		rep.sm.UseFrames(fl, func(index uint64, cmdLen int) (frames.Loc, bool) {
			return r.b.raftLog.EntryCommand(shard, node, index, cmdLen)
		})
		r.mu.Lock()
		r.frames[shard] = fl
		r.mu.Unlock()
	}
	create := func(uint64, uint64) sm.IOnDiskStateMachine { return timedUpdates{rep.sm, r.b.Metrics} }
	cfg := partitionShardConfig(shard, node, r.b.cfg.SnapshotEntries, r.b.cfg.RTT)
	// A founder starts the group with the others; any other node joins it
	// once the leader added it (membership.go).
	_, founder := p.founders[node]
	cfg.IsObserver = r.startsAsObserver(shard, node, founder)
	rep.observer.Store(cfg.IsObserver)
	var err error
	switch {
	case r.b.nh.HasNodeInfo(shard, node):
		r.b.quiet.awaitPeerTransports(r.b.ctx)
		err = r.b.nh.StartOnDiskCluster(nil, false, create, cfg)
	case founder:
		err = r.b.nh.StartOnDiskCluster(toTargets(p.founders), false, create, cfg)
	default:
		if err = os.MkdirAll(dir, 0o755); err == nil {
			err = r.b.nh.StartOnDiskCluster(nil, true, create, cfg)
		}
		r.b.Log.Info("partition replica waits to be added to its group", "shard", shard, "node", node)
	}
	if err != nil && !errors.Is(err, dragonboat.ErrClusterAlreadyExist) {
		return err
	}
	r.mu.Lock()
	r.byShard[shard] = rep
	r.mu.Unlock()
	return nil
}

// noteWaiting reports replicas left unstarted for want of open files, in
// the log when their number changes and in a metric: the broker stays up
// and serves the others, where a replica started past the limit would
// take Dragonboat down with its first failed file open.
func (r *replicaSet) noteWaiting(waiting, open int) {
	before := r.waiting.Swap(int64(waiting))
	switch {
	case waiting > 0 && int64(waiting) != before:
		r.b.Log.Error("partition replicas wait for open files: raise the broker's open-file limit (ulimit -n) or move replicas away",
			"waiting", waiting, "open_files", open, "limit", r.files.Limit, "files_per_replica", openfiles.PerReplica)
	case waiting == 0 && before > 0:
		r.b.Log.Info("every partition replica started: open files suffice again", "open_files", open, "limit", r.files.Limit)
	}
}

// remove stops a replica that this broker no longer hosts (its topic was
// deleted, or it moved away) and deletes its data, once Dragonboat closed
// its state machine.
func (r *replicaSet) remove(shard uint64) {
	rep := r.stop(shard)
	if rep == nil {
		return
	}
	select {
	case <-rep.sm.Closed():
	case <-time.After(5 * time.Second):
	}
	if rep.frames != nil {
		rep.frames.Close()
	}
	if err := r.b.nh.RemoveData(shard, rep.node); err != nil {
		r.b.Log.Warn("remove raft data failed", "shard", shard, "error", err)
	}
	if err := os.RemoveAll(rep.dir); err != nil {
		r.b.Log.Warn("remove partition data failed", "shard", shard, "error", err)
	}
	r.b.Log.Info("partition replica removed", "shard", shard)
}

// sweepStale deletes the data of partition replicas this broker no longer
// hosts that it did not remove itself: a replica moved away, or a topic
// deleted, while the broker was down. It runs once the broker's own
// registration is applied, so the metadata it reads is at least that
// recent; a directory stays if the metadata gives this broker that node.
func (r *replicaSet) sweepStale() {
	root := filepath.Join(r.b.cfg.DataDir, "partitions")
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	wanted := map[string]bool{}
	r.b.Meta.Read(func(s *meta.State) {
		s.EachPartitionOf(r.b.cfg.ID, func(_ *meta.Topic, p *meta.Partition) {
			wanted[filepath.Base(r.replicaDir(p.Shard, p.NodeOf(r.b.cfg.ID)))] = true
		})
	})
	for _, e := range entries {
		shardText, epochText, _ := strings.Cut(e.Name(), ".")
		shard, err := strconv.ParseUint(shardText, 10, 64)
		epoch, eerr := strconv.ParseUint("0"+epochText, 10, 32)
		if !e.IsDir() || err != nil || eerr != nil || wanted[e.Name()] {
			continue
		}
		if rep := r.get(shard); rep != nil && filepath.Base(rep.dir) == e.Name() {
			continue
		}
		node := meta.RaftNodeID(r.b.cfg.ID, uint32(epoch))
		if err := r.b.nh.RemoveData(shard, node); err != nil && !errors.Is(err, dragonboat.ErrClusterNotStopped) {
			r.b.Log.Warn("remove stale raft data failed", "shard", shard, "node", node, "error", err)
		}
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			r.b.Log.Warn("remove stale partition data failed", "dir", e.Name(), "error", err)
			continue
		}
		r.b.Log.Info("stale partition replica data removed", "dir", e.Name())
	}
}

// stop stops a replica's Raft node and forgets the replica; its data
// stays.
func (r *replicaSet) stop(shard uint64) *Replica {
	r.mu.Lock()
	rep := r.byShard[shard]
	delete(r.byShard, shard)
	r.mu.Unlock()
	if rep == nil {
		return nil
	}
	if err := r.b.nh.StopCluster(shard); err != nil && !errors.Is(err, dragonboat.ErrClusterNotFound) {
		r.b.Log.Error("stop partition replica failed", "shard", shard, "error", err)
	}
	r.forget(shard)
	return rep
}

// forget drops a stopped replica from the set.
func (r *replicaSet) forget(shard uint64) {
	r.mu.Lock()
	delete(r.byShard, shard)
	delete(r.frames, shard)
	r.mu.Unlock()
	r.b.leaders.forget(shard)
}

// Writer implements frames.Logs for the Raft log store: the frame log of
// a partition's Raft group, or nil.
func (r *replicaSet) Writer(shard uint64) frames.Writer {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if fl := r.frames[shard]; fl != nil {
		return fl
	}
	return nil // not a nil *frames.Log, which would be a Writer
}

// Dir implements frames.Logs.
func (r *replicaSet) Dir(shard, node uint64) string { return framesDir(r.b.cfg.DataDir, shard, node) }

func (r *replicaSet) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byShard = map[uint64]*Replica{}
}

func toTargets(m map[uint64]string) map[uint64]dragonboat.Target {
	out := make(map[uint64]dragonboat.Target, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
