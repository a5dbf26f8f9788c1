package replica

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v3"

	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
)

// A partition group's members are its replicas' Raft nodes
// (meta.Partition.Nodes), and a node id is never used twice: a broker
// that came back on an empty disk (a new incarnation) has new nodes, and
// so does a replica placed on a broker again after it left. The group's
// leader brings the members in line with the metadata, one change at a
// time, as Raft makes them: it removes the nodes of replicas that are
// gone for good (a lost disk), adds each wanted node as a non-voting
// observer, which catches up from a snapshot and its peers' logs, promotes
// it to a voter once its log reached the leader's, and only when every
// wanted node votes removes the nodes the partition no longer wants (a
// reassignment's old replicas), handing its own leadership over first if
// it is one of them; then it completes the reassignment in the metadata.
// An observer does not count toward a quorum, so a group never commits
// with fewer voters that kept their data than it had, and a group without
// a quorum of them has no leader to do any of this: it stays unavailable
// until enough of them return.

const (
	membershipInterval = time.Second
	// membershipParallelism bounds the groups whose membership a broker
	// changes at once.
	membershipParallelism = 16
)

// memberships keeps the members of the partition groups this broker leads
// in step with the metadata, and notes when its own observers become
// voters.
type memberships struct {
	b  *Manager
	mu sync.Mutex
	// voters holds, per partition group this broker leads, the brokers
	// whose current incarnation is a voting member, as last seen.
	voters map[uint64]map[int32]bool
	// leaderless holds, per group without a leader (the partitions hosted
	// and the metadata group), since when it has had none, as last seen.
	leaderless map[uint64]time.Time
	// led holds the groups seen with a leader since this
	// broker started: only those can be in an election rather than still
	// joining.
	led map[uint64]bool
	// changes counts the membership changes this broker made as leader.
	changes atomic.Int64
}

// leaderlessAfter is how long a group goes without a leader before it is
// reported as having lost its quorum: a few election timeouts, which an
// election with a quorum does not take.
func (b *Manager) leaderlessAfter() time.Duration { return 4 * ElectionWait(b.cfg.RTT) }

func newMemberships(b *Manager) *memberships {
	return &memberships{b: b, leaderless: map[uint64]time.Time{}, led: map[uint64]bool{}}
}

func (m *memberships) run(ctx context.Context) {
	for wait.Sleep(ctx, membershipInterval) {
		info := m.b.nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{SkipLogInfo: true})
		if info == nil {
			continue
		}
		plans := m.plans()
		voters := map[uint64]map[int32]bool{}
		// Groups change one at a time each, many groups at once: a broker
		// back on an empty disk has every replica it held replaced.
		var wg sync.WaitGroup
		slots := make(chan struct{}, membershipParallelism)
		for _, ci := range info.ClusterInfoList {
			if ci.ClusterID == meta.MetadataShard || ci.Pending {
				continue
			}
			if rep := m.b.replicas.get(ci.ClusterID); rep != nil && rep.node == ci.NodeID {
				rep.observer.Store(ci.IsObserver)
			}
			plan, hosted := plans[ci.ClusterID]
			if !ci.IsLeader || !hosted {
				continue
			}
			plan.self = ci.NodeID
			voters[ci.ClusterID] = plan.votingBrokers(ci.Nodes)
			if plan.reassigning || len(voters[ci.ClusterID]) < len(plan.want) || len(ci.Nodes) > len(plan.want) {
				wg.Add(1)
				slots <- struct{}{}
				go func(shard uint64, plan groupPlan) {
					defer func() { <-slots; wg.Done() }()
					m.reconcile(ctx, shard, plan)
				}(ci.ClusterID, plan)
			}
		}
		wg.Wait()
		m.mu.Lock()
		m.voters = voters
		m.mu.Unlock()
		m.trackLeaderless(time.Now(), info.ClusterInfoList)
	}
}

// trackLeaderless notes the groups this broker belongs to that have no
// leader, and since when. A partition group leaderless for longer than
// leaderlessAfter has lost its quorum (without a quorum of replicas that
// kept their disks, a group elects no one) and says so in the log and in
// raftka_partitions_without_leader.
func (m *memberships) trackLeaderless(now time.Time, infos []dragonboat.ClusterInfo) {
	after := m.b.leaderlessAfter()
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[uint64]bool{}
	for _, ci := range infos {
		seen[ci.ClusterID] = true
		_, ok, err := m.b.nh.GetLeaderID(ci.ClusterID)
		since, was := m.leaderless[ci.ClusterID]
		partition := ci.ClusterID != meta.MetadataShard
		switch {
		case err == nil && ok:
			m.led[ci.ClusterID] = true
			if partition && was && now.Sub(since) >= after {
				m.b.Log.Info("partition has a leader again", "partition", m.b.Meta.PartitionName(ci.ClusterID), "shard", ci.ClusterID)
			}
			delete(m.leaderless, ci.ClusterID)
		case !was:
			m.leaderless[ci.ClusterID] = now
		case partition && now.Sub(since) >= after && now.Sub(since)-membershipInterval < after:
			m.b.Log.Warn("partition has no leader: fewer than a quorum of its replicas are up with their data",
				"partition", m.b.Meta.PartitionName(ci.ClusterID), "shard", ci.ClusterID, "since", since)
		}
	}
	for shard := range m.leaderless {
		if !seen[shard] {
			delete(m.leaderless, shard)
		}
	}
	for shard := range m.led {
		if !seen[shard] {
			delete(m.led, shard)
		}
	}
}

// lostLeaders is the partition groups this broker belongs to that had a
// leader since it started and have known none for at least d, as last
// seen. Groups still joining (a new topic's, a restarted broker's) are
// not among them.
func (m *memberships) lostLeaders(now time.Time, d time.Duration) []uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []uint64
	for shard, since := range m.leaderless {
		if shard != meta.MetadataShard && m.led[shard] && now.Sub(since) >= d {
			out = append(out, shard)
		}
	}
	return out
}

// electing reports whether a group that had a leader lost it less
// than leaderlessAfter ago, as last seen: the election that another
// broker's restart causes, which leaves this broker ready to serve.
func (m *memberships) electing(shard uint64, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.led[shard] {
		return false
	}
	since, was := m.leaderless[shard]
	return !was || now.Sub(since) < m.b.leaderlessAfter()
}

// sawLeader notes that a group had a leader as soon as Raft reports one:
// a leader lost before the next pass of the membership loop still reads
// as an election (electing), not as a group still forming.
func (m *memberships) sawLeader(shard uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.led[shard] = true
}

// withoutLeader counts the hosted partition groups leaderless for longer
// than leaderlessAfter.
func (m *memberships) withoutLeader(now time.Time) int {
	after := m.b.leaderlessAfter()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for shard, since := range m.leaderless {
		if shard != meta.MetadataShard && now.Sub(since) >= after {
			n++
		}
	}
	return n
}

// votersOf returns the brokers whose current incarnation votes in a group
// this broker leads, or nil if it has not looked yet.
func (m *memberships) votersOf(shard uint64) map[int32]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.voters[shard]
}

// mayVote reports whether broker's current incarnation votes in a group
// this broker leads, as far as it knows: true before it first looked.
func (m *memberships) mayVote(shard uint64, broker int32) bool {
	voters := m.votersOf(shard)
	return voters == nil || voters[broker]
}

// replicaNode is a wanted replica of a partition: its broker, its Raft
// node and the broker's Raft address.
type replicaNode struct {
	broker int32
	node   uint64
	addr   string
}

// groupPlan is what the metadata wants of a partition group.
type groupPlan struct {
	// want are the replicas the partition is to have: a reassignment's
	// target while one runs.
	want        []replicaNode
	reassigning bool
	// observersFirst: new nodes join as observers; with the pebble Raft
	// log store, as voters (replicas.go, startsAsObserver).
	observersFirst bool
	// self is the leader's own node.
	self uint64
}

// plans returns what the metadata wants of each partition group this
// broker hosts.
func (m *memberships) plans() map[uint64]groupPlan {
	out := map[uint64]groupPlan{}
	m.b.Meta.Read(func(s *meta.State) {
		s.EachPartitionOf(m.b.cfg.ID, func(_ *meta.Topic, p *meta.Partition) {
			plan := groupPlan{reassigning: p.Reassignment != nil, observersFirst: m.b.raftLog != nil}
			for _, id := range p.TargetReplicas() {
				br, _ := s.Broker(id)
				plan.want = append(plan.want, replicaNode{broker: id, node: p.NodeOf(id), addr: br.RaftAddr})
			}
			out[p.Shard] = plan
		})
	})
	return out
}

// votingBrokers returns the wanted brokers whose node is among voters.
func (p groupPlan) votingBrokers(voters map[uint64]string) map[int32]bool {
	out := map[int32]bool{}
	for _, w := range p.want {
		if _, ok := voters[w.node]; ok {
			out[w.broker] = true
		}
	}
	return out
}

func (p groupPlan) targetBrokers() []int32 {
	out := make([]int32, len(p.want))
	for i, w := range p.want {
		out[i] = w.broker
	}
	return out
}

// reconcile makes the next membership change a group this broker leads
// needs, reading its membership linearizably first.
func (m *memberships) reconcile(ctx context.Context, shard uint64, plan groupPlan) {
	b := m.b
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	mem, err := b.nh.SyncGetClusterMembership(cctx, shard)
	if err != nil {
		return
	}
	now := time.Now()
	change := nextMemberChange(groupView{voters: mem.Nodes, observers: mem.Observers, removed: mem.Removed}, plan, func(id int32) bool {
		return b.progress.seenCaughtUp(now, shard, id, b.cfg.ReplicaLagMax)
	})
	if change.kind == noChange {
		return
	}
	log := b.Log.With("partition", b.Meta.PartitionName(shard), "shard", shard, "change", change.kind.String(),
		"broker", change.broker, "node", change.node, "epoch", meta.EpochOfNode(change.node))
	switch change.kind {
	case removeNode:
		err = b.nh.SyncRequestDeleteNode(cctx, shard, change.node, mem.ConfigChangeID)
	case addObserver:
		// Progress seen of the broker's earlier node says nothing of this one.
		b.progress.forget(shard, change.broker)
		err = b.nh.SyncRequestAddObserver(cctx, shard, change.node, change.addr, mem.ConfigChangeID)
	case addVoter, promote:
		err = b.nh.SyncRequestAddNode(cctx, shard, change.node, change.addr, mem.ConfigChangeID)
	case transferLeader:
		err = b.nh.RequestLeaderTransfer(shard, change.node)
	case renewNode:
		_, err = b.Propose(cctx, &meta.Command{RenewReplicaNode: &meta.RenewReplicaNode{Shard: shard, Broker: change.broker, Node: change.node}})
	case completeMove:
		var out meta.Outcome
		out, err = b.Propose(cctx, &meta.Command{CompleteReassignment: &meta.CompleteReassignment{Shard: shard, Target: plan.targetBrokers()}})
		if err == nil {
			err = out.Err
		}
	}
	if err != nil {
		log.Debug("membership change failed", "error", err)
		return
	}
	m.changes.Add(1)
	log.Info("partition membership changed")
}

type memberChangeKind int

const (
	noChange memberChangeKind = iota
	removeNode
	addObserver
	addVoter
	promote
	transferLeader
	renewNode
	completeMove
)

func (k memberChangeKind) String() string {
	return [...]string{"none", "remove", "add-observer", "add-voter", "promote", "transfer-leadership", "renew-node", "complete-reassignment"}[k]
}

// memberChange is one change to a partition group.
type memberChange struct {
	kind   memberChangeKind
	broker int32
	node   uint64
	addr   string
}

// groupView is a Raft group's membership.
type groupView struct {
	voters, observers map[uint64]string
	removed           map[uint64]struct{}
}

func (v groupView) member(node uint64) bool {
	_, voter := v.voters[node]
	_, observer := v.observers[node]
	return voter || observer
}

func (v groupView) sortedMembers() []uint64 {
	out := make([]uint64, 0, len(v.voters)+len(v.observers))
	for n := range v.voters {
		out = append(out, n)
	}
	for n := range v.observers {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// nextMemberChange decides a partition group's next membership change
// (see the top of this file). caughtUp reports whether the leader's probes
// saw a broker's replica reach its log end lately.
func nextMemberChange(v groupView, plan groupPlan, caughtUp func(int32) bool) memberChange {
	wanted := map[uint64]bool{}
	for _, w := range plan.want {
		wanted[w.node] = true
	}
	members := v.sortedMembers()
	// Nodes of a wanted broker older than its wanted one hold nothing
	// that counts: the broker lost its disk, or the replica left and came
	// back.
	for _, w := range plan.want {
		if old, ok := meta.OlderNodeOf(v.voters, v.observers, w.broker, w.node); ok && old != plan.self {
			return memberChange{kind: removeNode, broker: w.broker, node: old}
		}
	}
	for _, w := range plan.want {
		if v.member(w.node) {
			continue
		}
		if _, gone := v.removed[w.node]; gone {
			return memberChange{kind: renewNode, broker: w.broker, node: w.node}
		}
		if newerMember(members, w) {
			continue // this broker's metadata lags the group
		}
		if !plan.observersFirst {
			return memberChange{kind: addVoter, broker: w.broker, node: w.node, addr: w.addr}
		}
		return memberChange{kind: addObserver, broker: w.broker, node: w.node, addr: w.addr}
	}
	for _, w := range plan.want {
		if _, observing := v.observers[w.node]; observing && caughtUp(w.broker) {
			return memberChange{kind: promote, broker: w.broker, node: w.node, addr: w.addr}
		}
	}
	for _, w := range plan.want {
		if _, voting := v.voters[w.node]; !voting {
			return memberChange{}
		}
	}
	// Every wanted node votes: the others go, the leader's own last, by
	// handing its leadership to a caught-up wanted voter.
	for _, n := range members {
		if !wanted[n] && n != plan.self {
			return memberChange{kind: removeNode, broker: meta.BrokerOfNode(n), node: n}
		}
	}
	if !wanted[plan.self] {
		for _, w := range plan.want {
			if caughtUp(w.broker) {
				return memberChange{kind: transferLeader, broker: w.broker, node: w.node}
			}
		}
		return memberChange{}
	}
	if plan.reassigning {
		return memberChange{kind: completeMove}
	}
	return memberChange{}
}

// newerMember reports whether the group has a node of w's broker newer
// than w's.
func newerMember(members []uint64, w replicaNode) bool {
	for _, n := range members {
		if meta.BrokerOfNode(n) == w.broker && meta.EpochOfNode(n) > meta.EpochOfNode(w.node) {
			return true
		}
	}
	return false
}
