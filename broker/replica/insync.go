package replica

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/internal/wait"
)

// A replica is in sync, for min.insync.replicas, when its broker answers
// and it has kept up with the leader: as Kafka's replica.lag.time.max.ms
// has it, it reached the leader's log end of a moment before at least once
// within ReplicaLagMax. A replica that is restarting, catching up from a
// snapshot or on a stalled process does not count, so acks=all on a topic
// with min.insync.replicas=3 is refused rather than acknowledged with two
// copies. Only a partition's leader knows; other brokers answer metadata
// with the replicas on live brokers.
//
// The leader asks each follower's broker for the log ends of the replicas
// it hosts, in one ListOffsets per broker carrying the leader's id as the
// replica id (answered from the local replica, as a follower fetch is).

const followerProbeInterval = 500 * time.Millisecond

// followerProgress is the leader's view of its followers.
type followerProgress struct {
	mu sync.Mutex
	// per led shard: when this broker began leading it, its log end at the
	// last probe, and when each follower last reached that end
	ledSince  map[uint64]time.Time
	leaderEnd map[uint64]int64
	caughtUp  map[uint64]map[int32]time.Time
}

// probe is a partition this broker leads, as a follower's broker is asked
// about it.
type probe struct {
	topic string
	index int32
	shard uint64
}

// trackFollowers probes the followers of every partition this broker leads.
func (b *Manager) trackFollowers(ctx context.Context) {
	for wait.Sleep(ctx, followerProbeInterval) {
		led := map[uint64]int64{}
		asked := map[uint64][]int32{}
		byFollower := map[int32][]probe{}
		for _, h := range b.Meta.HostedPartitions(b.cfg.ID, nil) {
			rep := b.replicas.get(h.Shard)
			if rep == nil || !b.isLeader(h.Shard) {
				continue
			}
			_, led[h.Shard] = rep.sm.Log().Offsets()
			asked[h.Shard] = nil
			for _, id := range h.Replicas {
				if id != b.cfg.ID && b.Liveness.IsLive(id) {
					byFollower[id] = append(byFollower[id], probe{h.Topic, h.Index, h.Shard})
					asked[h.Shard] = append(asked[h.Shard], id)
				}
			}
		}
		ends := map[uint64]map[int32]int64{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for id, probes := range byFollower {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got := b.followerEnds(ctx, id, probes)
				mu.Lock()
				defer mu.Unlock()
				for shard, end := range got {
					if ends[shard] == nil {
						ends[shard] = map[int32]int64{}
					}
					ends[shard][id] = end
				}
			}()
		}
		wg.Wait()
		now := time.Now()
		b.progress.update(now, led, ends)
		b.quiet.followersAnswered(now, asked, ends)
	}
}

// followerEnds asks broker id for the log ends of its replicas of probes.
func (b *Manager) followerEnds(ctx context.Context, id int32, probes []probe) map[uint64]int64 {
	cl, err := b.peers.client(id)
	if err != nil {
		return nil
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = b.cfg.ID
	shards := map[string]map[int32]uint64{}
	topicAt := map[string]int{}
	for _, p := range probes {
		i, ok := topicAt[p.topic]
		if !ok {
			i = len(req.Topics)
			topicAt[p.topic], shards[p.topic] = i, map[int32]uint64{}
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = p.topic
			req.Topics = append(req.Topics, rt)
		}
		shards[p.topic][p.index] = p.shard
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p.index, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	rctx, cancel := context.WithTimeout(ctx, followerProbeInterval)
	defer cancel()
	kresp, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return nil
	}
	out := map[uint64]int64{}
	for _, t := range kresp.(*kmsg.ListOffsetsResponse).Topics {
		for _, p := range t.Partitions {
			if shard, ok := shards[t.Topic][p.Partition]; ok && p.ErrorCode == 0 {
				out[shard] = p.Offset
			}
		}
	}
	return out
}

// update records one probe round: led holds the leader's log end of each
// shard it leads now, ends what each follower answered.
func (f *followerProgress) update(now time.Time, led map[uint64]int64, ends map[uint64]map[int32]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ledSince == nil {
		f.ledSince, f.leaderEnd, f.caughtUp = map[uint64]time.Time{}, map[uint64]int64{}, map[uint64]map[int32]time.Time{}
	}
	for shard := range f.ledSince {
		if _, ok := led[shard]; !ok {
			delete(f.ledSince, shard)
			delete(f.leaderEnd, shard)
			delete(f.caughtUp, shard)
		}
	}
	for shard, end := range led {
		if _, ok := f.ledSince[shard]; !ok {
			f.ledSince[shard], f.caughtUp[shard] = now, map[int32]time.Time{}
		} else {
			for id, followerEnd := range ends[shard] {
				if followerEnd >= f.leaderEnd[shard] {
					f.caughtUp[shard][id] = now
				}
			}
		}
		f.leaderEnd[shard] = end
	}
}

// forget drops what was seen of a follower of a shard: a new incarnation
// of its broker starts from nothing.
func (f *followerProgress) forget(shard uint64, id int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.caughtUp[shard], id)
}

// inSync reports whether follower id of a shard this broker leads has kept
// up within lagMax; a leader new to the shard gives every follower that
// long to show it.
func (f *followerProgress) inSync(now time.Time, shard uint64, id int32, lagMax time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	since, ok := f.ledSince[shard]
	if !ok || now.Sub(since) < lagMax {
		return true
	}
	return now.Sub(f.caughtUp[shard][id]) < lagMax
}

// seenCaughtUp reports whether follower id of a shard this broker leads was
// seen to reach the leader's log end within lagMax; unlike inSync, a leader
// new to the shard gives no grace.
func (f *followerProgress) seenCaughtUp(now time.Time, shard uint64, id int32, lagMax time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.caughtUp[shard][id]
	return ok && now.Sub(t) < lagMax
}

// inSyncReplicas returns the replicas of a shard that are in sync: on its
// leader, those on live brokers that kept up and whose current incarnation
// votes in the group; elsewhere, those on live brokers.
func (b *Manager) inSyncReplicas(shard uint64, replicas []int32) []int32 {
	live := b.liveReplicas(replicas)
	if !b.isLeader(shard) {
		return live
	}
	now := time.Now()
	out := live[:0:0]
	for _, id := range live {
		if id == b.cfg.ID || (b.progress.inSync(now, shard, id, b.cfg.ReplicaLagMax) && b.members.mayVote(shard, id)) {
			out = append(out, id)
		}
	}
	return out
}
