package replica

import (
	"context"
	"sync"
	"time"

	"github.com/raftka/raftka/broker/cluster"
	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
)

// A partition group that has seen no proposal, read or vote for twenty
// election timeouts (QuietAfter) goes quiet (Dragonboat's quiesce): its
// leader stops heartbeating and checking its quorum, and its followers
// stop counting down to an election. Dragonboat still ticks it, which is
// all an idle replica costs. Any message but a heartbeat wakes a quiet replica:
// a produce replicates, a vote asks, a ReadIndex reaches the leader.
//
// What Dragonboat does not do is notice, in a quiet group, a leader that
// died or a follower that restarted: nothing times out, nobody heartbeats.
// quietGroups does it from the broker's side, from what liveness and the
// follower probes (insync.go) learn anyway:
//   - a peer that stops answering liveness probes (dead, paused or cut
//     off): each group with its leader there is woken on one follower, the
//     first in preferred order on a reachable broker (standsFirst), and on
//     the others an election timeout later. The woken follower counted
//     down while quiet, so it stands for election at its next tick, and
//     the group is led again within a tick and a vote;
//   - a peer that answers again, as a restarted broker does once its Raft
//     transport listens: every group this broker leads with a replica
//     there is woken, before that replica starts;
//   - a follower replica on a live broker that does not answer the
//     leader's probes, as a restarting broker's replicas do until they
//     start, or that answers for the first time: its group is kept awake
//     on the leader. A started replica knows no leader and counts down to
//     an election; the leader's heartbeats must reach it first, or it
//     deposes a leader that is fine;
//   - a group that had a leader here and has known none for four
//     election timeouts (leaderlessAfter, more than an election between
//     live replicas takes): it is woken, so that its quiet replicas count
//     down and elect. An unreachable peer does not hold this back: a
//     group short of a quorum is woken in vain, at most once per
//     wakeEvery, and costs a few messages. Dragonboat quiesces a replica
//     after twenty idle election timeouts whether it knows a leader or
//     not, and a quiet follower that knows one drops votes as if its
//     leader's lease held. So a leader deposed by a restarted replica's
//     vote could leave a group with nobody counting down: the idle
//     benchmark saw 3-5 of 2,000 groups per broker leaderless for ten
//     minutes after a broker's restart.
//
// A peer's Dragonboat transport retries an address that refused it at
// most every 1.5 s (its circuit breaker: 1 s, randomised by half), and
// drops what it sends there meanwhile, heartbeats included. So a
// restarting broker's replicas that already exist start only once
// peerTransportRetry has passed since its Raft address began to listen:
// by then each peer reconnected, and its woken leaders' heartbeats arrive
// before the started replicas' election timeouts end.
//
// Waking is a ReadIndex, which Dragonboat counts as activity on the
// replica it is made on and forwards to the leader. It is a read, so it
// changes no state: waking a group that did not need it costs a few
// messages, and at worst an election, never an entry.
type quietGroups struct {
	b *Manager
	// answered are, per group this broker leads, the followers whose
	// replicas answered the last probe round; trackFollowers' alone.
	answered map[uint64]map[int32]bool
	// unreachable are the peers unreachable at the last pass, orphaned the
	// groups whose leader was on one, since when; pass's alone.
	unreachable map[int32]bool
	orphaned    map[uint64]time.Time
	// mu guards woken, which both loops write.
	mu sync.Mutex
	// woken is when each group was last woken, so that a group is woken
	// once per wakeEvery, not at every pass.
	woken map[uint64]time.Time
}

// quietCheckInterval is how often peers' reachability is read: half the
// probe interval, so a failed probe is acted on promptly.
const quietCheckInterval = cluster.LivenessInterval / 2

// wakeEvery is how far apart the wakes of one group are: often enough
// that a woken leader, which goes quiet again QuietAfter its last
// activity, stays awake while a reason to wake it lasts.
func wakeEvery(rtt time.Duration) time.Duration { return 2 * ElectionWait(rtt) }

// peerTransportRetry is Dragonboat's longest retry interval of a peer's
// transport, and the time a wake takes to reach the peer's leaders
// (quietCheckInterval after a liveness probe).
const peerTransportRetry = 1500*time.Millisecond + cluster.LivenessInterval + quietCheckInterval

// awaitPeerTransports waits until peerTransportRetry has passed since the
// node host began to listen; at once after that.
func (q *quietGroups) awaitPeerTransports(ctx context.Context) {
	if d := time.Until(q.b.listening.Add(peerTransportRetry)); d > 0 {
		wait.Sleep(ctx, d)
	}
}

func newQuietGroups(b *Manager) *quietGroups {
	return &quietGroups{b: b, woken: map[uint64]time.Time{}, answered: map[uint64]map[int32]bool{}}
}

func (q *quietGroups) run(ctx context.Context) {
	for wait.Sleep(ctx, quietCheckInterval) {
		q.pass(time.Now())
	}
}

// pass wakes the groups this broker follows whose leader is on a peer
// that does not answer, and those it leads with a replica on a peer that
// answers again.
func (q *quietGroups) pass(now time.Time) {
	b := q.b
	q.forget(now)
	for _, shard := range b.members.lostLeaders(now, b.leaderlessAfter()) {
		q.wake(shard, now)
	}
	unreachable, returned := map[int32]bool{}, map[int32]bool{}
	for _, br := range b.Meta.Brokers() {
		if br.ID == b.cfg.ID {
			continue
		}
		if b.Liveness.Unreachable(br.ID) {
			unreachable[br.ID] = true
		} else if q.unreachable[br.ID] {
			returned[br.ID] = true
		}
	}
	q.unreachable = unreachable
	orphaned := map[uint64]time.Time{}
	defer func() { q.orphaned = orphaned }()
	if len(unreachable) == 0 && len(returned) == 0 {
		return
	}
	for _, h := range b.Meta.HostedPartitions(b.cfg.ID, nil) {
		rep := b.replicas.get(h.Shard)
		if rep == nil {
			continue
		}
		leader, known, err := b.nh.GetLeaderID(h.Shard)
		if err != nil {
			continue
		}
		switch {
		case leaderUnreachable(rep.node, leader, known, unreachable):
			since, ok := q.orphaned[h.Shard]
			if !ok {
				since = now
			}
			orphaned[h.Shard] = since
			if standsFirst(b.cfg.ID, h.Replicas, leader, known, unreachable) || now.Sub(since) >= ElectionWait(b.cfg.RTT) {
				q.wake(h.Shard, now)
			}
		case known && leader == rep.node && hostsAny(h.Replicas, returned):
			q.wake(h.Shard, now)
		}
	}
}

// standsFirst: of a group's replicas (in preferred order), self is the
// first that is neither on the leader's broker nor on an unreachable one.
// Only that follower is woken at once: two woken together stand for
// election at the same tick and split the vote, which costs another
// election timeout. The others are woken an election timeout later, in
// case it cannot win (its log is behind, or it stalls).
func standsFirst(self int32, replicas []int32, leader uint64, known bool, unreachable map[int32]bool) bool {
	for _, id := range replicas {
		if unreachable[id] || (known && leader != 0 && id == meta.BrokerOfNode(leader)) {
			continue
		}
		return id == self
	}
	return false
}

// hostsAny: one of replicas is on a broker of ids.
func hostsAny(replicas []int32, ids map[int32]bool) bool {
	for _, id := range replicas {
		if ids[id] {
			return true
		}
	}
	return false
}

// leaderUnreachable: a replica (node) whose group's leader, as it knows
// it, is on an unreachable peer, or that knows no leader while a peer is
// unreachable.
func leaderUnreachable(node, leader uint64, known bool, unreachable map[int32]bool) bool {
	if !known || leader == 0 {
		return len(unreachable) > 0
	}
	return leader != node && unreachable[meta.BrokerOfNode(leader)]
}

// followersAnswered keeps awake each group this broker leads that a
// follower asked at this round did not answer for, or answered for the
// first time: asked holds, per group led at this round, the followers
// probed, ends their answers.
func (q *quietGroups) followersAnswered(now time.Time, asked map[uint64][]int32, ends map[uint64]map[int32]int64) {
	for shard := range q.answered {
		if _, ok := asked[shard]; !ok {
			delete(q.answered, shard)
		}
	}
	for shard, followers := range asked {
		before, ok := q.answered[shard]
		if needsFollowerWake(followers, before, ok, ends[shard]) {
			q.wake(shard, now)
		}
		answered := map[int32]bool{}
		for id := range ends[shard] {
			answered[id] = true
		}
		q.answered[shard] = answered
	}
}

// needsFollowerWake: of the followers asked, one did not answer, or
// answered and had not at the round before (known tells whether there was
// a round before since this broker leads the group).
func needsFollowerWake(asked []int32, before map[int32]bool, known bool, ends map[int32]int64) bool {
	for _, id := range asked {
		_, answered := ends[id]
		if !answered || (known && !before[id]) {
			return true
		}
	}
	return false
}

// wake makes a ReadIndex on this broker's replica of shard, which ends its
// quiet, unless it was woken less than wakeEvery ago; the read itself is
// not waited for.
func (q *quietGroups) wake(shard uint64, now time.Time) {
	q.mu.Lock()
	if now.Sub(q.woken[shard]) < wakeEvery(q.b.cfg.RTT) {
		q.mu.Unlock()
		return
	}
	q.woken[shard] = now
	q.mu.Unlock()
	if _, err := q.b.nh.ReadIndex(shard, 2*ElectionWait(q.b.cfg.RTT)); err != nil {
		q.b.Log.Debug("waking a quiet group", "shard", shard, "error", err)
	}
}

// forget drops the wakes older than wakeEvery, which no longer hold a
// wake back, so that woken holds no group that was moved away or deleted.
func (q *quietGroups) forget(now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for shard, at := range q.woken {
		if now.Sub(at) >= wakeEvery(q.b.cfg.RTT) {
			delete(q.woken, shard)
		}
	}
}
