package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/lni/dragonboat/v3"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/raftka/raftka/broker/cluster"
	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
)

// A forced recovery (meta/recovery.go) is asked for with ElectLeaders'
// unclean election type (kafka-leader-election.sh --election-type
// unclean), partition by partition. The broker asked collects the state
// of each replica that kept its data (GET /internal/replica on their
// brokers), picks the voter whose Raft log is the most up to date, and
// proposes RecoverPartition, which the metadata refuses while a quorum of
// the group's voters kept their data. That replica's broker then restarts
// its node as the group's only voter, keeping the entries its log holds
// (replicaSet.restartAlone); once the node leads and applied them, it
// proposes CompleteRecovery with the partition's log end offset, and
// the answer reports which offsets were kept and from which offset on
// the records only the lost replicas held are gone.

// replicaLogState is a partition replica's Raft log as its broker sees
// it: what a forced recovery compares.
type replicaLogState struct {
	Broker int32  `json:"broker"`
	Node   uint64 `json:"node"`
	// Voter: the node votes in the group as it knows the group.
	Voter bool `json:"voter"`
	// Voters are the group's voters as the replica knows them.
	Voters       []uint64 `json:"voters"`
	HasLeader    bool     `json:"hasLeader"`
	LastIndex    uint64   `json:"lastIndex"`
	LastTerm     uint64   `json:"lastTerm"`
	LogEndOffset int64    `json:"logEndOffset"`
}

// chooseRecoverySource picks the replica a group restarts from: among the
// voters, the one whose Raft log is the most up to date as Raft compares
// logs (last term, then last index), which holds every entry another
// surviving voter knew committed; the lowest broker id on a tie.
func chooseRecoverySource(states []replicaLogState) (replicaLogState, bool) {
	var best replicaLogState
	found := false
	for _, s := range states {
		if !s.Voter {
			continue
		}
		if !found || s.LastTerm > best.LastTerm || (s.LastTerm == best.LastTerm &&
			(s.LastIndex > best.LastIndex || (s.LastIndex == best.LastIndex && s.Broker < best.Broker))) {
			best, found = s, true
		}
	}
	return best, found
}

// recoveries runs the forced recoveries of the partitions this broker
// hosts the surviving replica of, and answers the requests for them.
type recoveries struct {
	b  *Manager
	mu sync.Mutex
	// target holds, per group restarted alone, the index of the last
	// entry it kept: the recovery completes once it applied that far.
	target map[uint64]uint64
}

func newRecoveries(b *Manager) *recoveries { return &recoveries{b: b, target: map[uint64]uint64{}} }

// localState is the state of this broker's replica of a partition group.
func (r *recoveries) localState(shard uint64) (replicaLogState, bool) {
	b := r.b
	rep := b.replicas.get(shard)
	if rep == nil || b.raftLog == nil {
		return replicaLogState{}, false
	}
	st := replicaLogState{Broker: b.cfg.ID, Node: rep.node}
	if info := b.nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{SkipLogInfo: true}); info != nil {
		for _, ci := range info.ClusterInfoList {
			if ci.ClusterID != shard || ci.NodeID != rep.node {
				continue
			}
			for n := range ci.Nodes {
				st.Voters = append(st.Voters, n)
			}
			_, st.Voter = ci.Nodes[rep.node]
			st.Voter = st.Voter && !ci.IsObserver
		}
	}
	sort.Slice(st.Voters, func(i, j int) bool { return st.Voters[i] < st.Voters[j] })
	_, st.HasLeader, _ = b.nh.GetLeaderID(shard)
	var err error
	if st.LastIndex, st.LastTerm, err = b.raftLog.LastEntry(shard, rep.node); err != nil {
		return replicaLogState{}, false
	}
	_, st.LogEndOffset = rep.sm.Log().Offsets()
	return st, true
}

// handleReplica answers GET /internal/replica?shard=N with this broker's
// replicaLogState of the group, 404 if it hosts none.
func (b *Manager) handleReplica(w http.ResponseWriter, req *http.Request) {
	shard, err := strconv.ParseUint(req.URL.Query().Get("shard"), 10, 64)
	if err != nil {
		http.Error(w, "shard: "+err.Error(), http.StatusBadRequest)
		return
	}
	st, ok := b.recoveries.localState(shard)
	if !ok {
		http.Error(w, "no replica of that shard here", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}

// hostedReplica is a partition replica the metadata places: its broker,
// its node and where the broker's HTTP endpoint is.
type hostedReplica struct {
	broker   int32
	node     uint64
	httpAddr string
}

// gather asks each replica's broker for its replica's state; a broker
// that does not answer, or whose replica is not the node the metadata
// gives it, is left out and named in missing.
func (r *recoveries) gather(ctx context.Context, shard uint64, replicas []hostedReplica) (states []replicaLogState, missing []int32) {
	client := r.b.PeerHTTP.Client(3 * time.Second)
	for _, h := range replicas {
		var st replicaLogState
		var ok bool
		if h.broker == r.b.cfg.ID {
			st, ok = r.localState(shard)
		} else if h.httpAddr != "" {
			st, ok = r.peerReplicaState(ctx, client, h.httpAddr, shard)
		}
		if !ok || st.Node != h.node {
			missing = append(missing, h.broker)
			continue
		}
		states = append(states, st)
	}
	return states, missing
}

func (r *recoveries) peerReplicaState(ctx context.Context, client *http.Client, addr string, shard uint64) (replicaLogState, bool) {
	var st replicaLogState
	return st, cluster.GetJSON(ctx, client, r.b.PeerHTTP.URL(addr, "/internal/replica", url.Values{"shard": {strconv.FormatUint(shard, 10)}}), &st) == nil
}

// force runs a forced recovery of a partition and waits until it is done,
// answering as ElectLeaders does: an error and a message, or none and the
// report.
func (r *recoveries) force(ctx context.Context, topic string, index int32) (*kerr.Error, string) {
	b := r.b
	var shard uint64
	var replicas []hostedReplica
	found := false
	b.Meta.Read(func(s *meta.State) {
		t := s.Topic(topic)
		if t == nil || index < 0 || int(index) >= len(t.Partitions) {
			return
		}
		p := &t.Partitions[index]
		found, shard = true, p.Shard
		for _, id := range p.Replicas {
			br, _ := s.Broker(id)
			replicas = append(replicas, hostedReplica{broker: id, node: p.NodeOf(id), httpAddr: br.HTTPAddr})
		}
	})
	if !found {
		return kerr.UnknownTopicOrPartition, "unknown topic or partition"
	}
	states, missing := r.gather(ctx, shard, replicas)
	for _, st := range states {
		if st.HasLeader {
			return kerr.ElectionNotNeeded, "the partition has a leader"
		}
	}
	src, ok := chooseRecoverySource(states)
	if !ok {
		return kerr.EligibleLeadersNotAvailable, fmt.Sprintf("no voting replica that kept its data answers (brokers not answering: %v); "+
			"start the brokers that hold the partition's surviving replicas first", missing)
	}
	cmd := &meta.RecoverPartition{Shard: shard, Node: src.Node, Voters: src.Voters, CommittedEnd: src.LogEndOffset, AtMillis: time.Now().UnixMilli()}
	out, err := b.Propose(ctx, &meta.Command{RecoverPartition: cmd})
	switch {
	case err != nil:
		return kerr.RequestTimedOut, "the metadata group did not take the recovery: " + err.Error()
	case errors.Is(out.Err, kerr.InvalidRequest):
		return kerr.InvalidRequest, fmt.Sprintf("a quorum of the partition's voters %v kept their data: the partition elects a leader once their brokers are up. "+
			"A forced recovery is only for a partition that lost a quorum of its replicas' disks (or another recovery of it is under way)", brokersOf(src.Voters))
	case out.Err != nil:
		return kafkaerr.Of(out.Err, kerr.EligibleLeadersNotAvailable), "the metadata refused the recovery: " + out.Err.Error()
	}
	b.Log.Warn("forced recovery of partition asked", "partition", topic+"-"+strconv.Itoa(int(index)), "shard", shard,
		"from_broker", src.Broker, "node", src.Node, "voters", src.Voters, "committed_end", src.LogEndOffset, "not_answering", missing)
	for {
		var rec *meta.Recovery
		b.Meta.Read(func(s *meta.State) {
			if _, p := s.PartitionOfShard(shard); p != nil && p.Recovery != nil && p.Recovery.Node == src.Node {
				c := *p.Recovery
				rec = &c
			}
		})
		if rec != nil && rec.Done {
			return nil, recoveryReport(src.Broker, *rec)
		}
		if !wait.Sleep(ctx, 100*time.Millisecond) {
			return kerr.RequestTimedOut, fmt.Sprintf("the recovery from broker %d was started and goes on; it has not completed yet", src.Broker)
		}
	}
}

// recoveryReport says what a forced recovery kept and lost.
func recoveryReport(broker int32, rec meta.Recovery) string {
	msg := fmt.Sprintf("recovered from broker %d, whose replica held the records below offset %d as committed", broker, rec.CommittedEnd)
	if kept := rec.RecoveredEnd - rec.CommittedEnd; kept > 0 {
		msg += fmt.Sprintf("; it also held %d records not known to be committed (offsets %d to %d), which were kept", kept, rec.CommittedEnd, rec.RecoveredEnd-1)
	}
	return msg + fmt.Sprintf("; records that only the lost replicas held, from offset %d on, are gone", rec.RecoveredEnd)
}

func brokersOf(nodes []uint64) []int32 {
	out := make([]int32, len(nodes))
	for i, n := range nodes {
		out[i] = meta.BrokerOfNode(n)
	}
	return out
}

// pendingRecovery is a forced recovery this broker's replica is the
// source of.
type pendingRecovery struct {
	shard uint64
	node  uint64
}

func (r *recoveries) run(ctx context.Context) {
	for {
		changed := r.b.Meta.Changed()
		for _, job := range r.pending() {
			r.advance(ctx, job)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-time.After(time.Second):
		}
	}
}

func (r *recoveries) pending() []pendingRecovery {
	var out []pendingRecovery
	r.b.Meta.Read(func(s *meta.State) {
		s.EachPartitionOf(r.b.cfg.ID, func(_ *meta.Topic, p *meta.Partition) {
			if rec := p.Recovery; rec != nil && !rec.Done && rec.Node == p.NodeOf(r.b.cfg.ID) {
				out = append(out, pendingRecovery{shard: p.Shard, node: rec.Node})
			}
		})
	})
	return out
}

// advance takes a recovery one step: restart the node alone while the
// group has no leader, then, once it leads and applied what it kept,
// complete it. A group that has a leader led by another node (its quorum
// came back before the restart) completes as it is.
func (r *recoveries) advance(ctx context.Context, job pendingRecovery) {
	b := r.b
	rep := b.replicas.get(job.shard)
	if rep == nil || rep.node != job.node {
		return
	}
	log := b.Log.With("partition", b.Meta.PartitionName(job.shard), "shard", job.shard, "node", job.node)
	leader, ok, err := b.nh.GetLeaderID(job.shard)
	if err != nil {
		return
	}
	if !ok {
		st, _ := r.localState(job.shard)
		if len(st.Voters) == 1 && st.Voters[0] == job.node {
			return // alone already: it elects itself
		}
		last, err := b.replicas.restartAlone(ctx, job.shard)
		if err != nil {
			log.Warn("forced recovery: restart as the only voter failed; retrying", "error", err)
			return
		}
		r.mu.Lock()
		r.target[job.shard] = last
		r.mu.Unlock()
		log.Warn("forced recovery: replica restarted as its group's only voter", "kept_through_index", last)
		return
	}
	if leader == job.node {
		r.mu.Lock()
		target, known := r.target[job.shard]
		if !known {
			// Restarted alone before this broker restarted: what it holds now.
			target, _, _ = b.raftLog.LastEntry(job.shard, job.node)
			r.target[job.shard] = target
		}
		r.mu.Unlock()
		if applied, _ := rep.sm.AppliedProgress(); applied < target {
			return
		}
	}
	_, end := rep.sm.Log().Offsets()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := b.Propose(cctx, &meta.Command{CompleteRecovery: &meta.CompleteRecovery{Shard: job.shard, Node: job.node, RecoveredEnd: end}})
	if err != nil || out.Err != nil {
		return
	}
	r.mu.Lock()
	delete(r.target, job.shard)
	r.mu.Unlock()
	log.Warn("forced recovery done", "recovered_end", end, "leader", leader)
}

// restartAlone restarts a replica's node as its group's only voter for a
// forced recovery (raftlog.Store.RestartAlone), after a snapshot that
// covers every entry it knew committed. It returns the index of the last
// entry the node kept.
func (r *replicaSet) restartAlone(ctx context.Context, shard uint64) (uint64, error) {
	b := r.b
	if b.raftLog == nil {
		return 0, errors.New("a forced recovery needs the broker's own Raft log store (--raft-log-store wal)")
	}
	r.lifecycle.Lock()
	defer r.lifecycle.Unlock()
	rep := r.get(shard)
	p, ok := r.desired()[shard]
	if rep == nil || !ok || p.node != rep.node {
		return 0, errors.New("the replica is not this broker's current one")
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, _ = b.nh.SyncRequestSnapshot(sctx, shard, dragonboat.SnapshotOption{}) // nothing new since the last one is fine
	cancel()
	if err := snapshotCoversCommit(b, shard, rep.node); err != nil {
		return 0, err
	}
	if err := b.nh.StopCluster(shard); err != nil {
		return 0, err
	}
	select {
	case <-rep.sm.Closed():
	case <-time.After(5 * time.Second):
	}
	// The frame log stays open until the Raft log store read the entries.
	last, err := b.raftLog.RestartAlone(shard, rep.node, b.cfg.RaftAddr)
	r.forget(shard)
	if rep.frames != nil {
		rep.frames.Close()
	}
	if serr := r.start(shard, p); serr != nil {
		return 0, errors.Join(err, serr)
	}
	return last, err
}

func snapshotCoversCommit(b *Manager, shard, node uint64) error {
	snaps, err := b.raftLog.ListSnapshots(shard, node, math.MaxUint64)
	if err != nil || len(snaps) == 0 {
		return fmt.Errorf("no snapshot yet (%v)", err)
	}
	latest := snaps[len(snaps)-1].Index
	rs, err := b.raftLog.ReadRaftState(shard, node, latest)
	if err != nil {
		return err
	}
	if rs.State.Commit > latest {
		return fmt.Errorf("the snapshot at %d is behind the commit index %d: the replica is still applying", latest, rs.State.Commit)
	}
	return nil
}
