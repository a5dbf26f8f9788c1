package server

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/meta"
)

// placementRules are the newest placement rules every broker applies:
// while brokers from before placement epochs run (a rolling upgrade), the
// rules they know, so that every replica of the metadata places alike.
func (srv *Server) placementRules() int {
	rules := meta.PlacementLegacy
	srv.Meta.Read(func(s *meta.State) {
		switch {
		case s.AllBrokersRecordIncarnations() && s.AllBrokersHave(meta.FeatureReplicaCapacity):
			rules = meta.PlacementCapacity
		case s.AllBrokersRecordIncarnations():
			rules = meta.PlacementEpochs
		}
	})
	return rules
}

// preferredLeaderWait bounds how long awaitLeaders waits, once every new
// partition has a leader, for the live preferred replicas to lead.
const preferredLeaderWait = 4 * time.Second

// awaitLeaders waits, within ctx, until every partition of the topics has
// a leader recorded, so a client that creates then produces does not start
// with a round of LEADER_NOT_AVAILABLE; and, for a little longer, until
// each is led by its preferred replica (the leader hands it over at once,
// see handBackNewPartition), so leadership does not move under the client
// right after it starts. A preferred replica on a broker the liveness
// probes have not seen yet is probed first rather than taken for gone.
func (srv *Server) awaitLeaders(ctx context.Context, topics []string) {
	var preferredBrokers []meta.Broker
	srv.Meta.Read(func(s *meta.State) {
		seen := map[int32]bool{}
		for _, name := range topics {
			if t := s.Topic(name); t != nil {
				for _, p := range t.Partitions {
					if len(p.Replicas) > 0 && !seen[p.Replicas[0]] {
						seen[p.Replicas[0]] = true
						br, _ := s.Broker(p.Replicas[0])
						preferredBrokers = append(preferredBrokers, br)
					}
				}
			}
		}
	})
	srv.Liveness.Confirm(preferredBrokers)
	var allLedSince time.Time
	for len(topics) > 0 {
		changed := srv.Meta.Changed()
		led, preferred := true, true
		srv.Meta.Read(func(s *meta.State) {
			for _, name := range topics {
				if t := s.Topic(name); t != nil {
					// An ordered growth is shown once its old partitions' leaders
					// reported their splits, which needs them led too.
					led = led && t.VisiblePartitions() == int32(len(t.Partitions))
					for _, p := range t.Partitions {
						led = led && p.Leader >= 0
						if len(p.Replicas) > 0 && p.Leader != p.Replicas[0] && srv.Liveness.IsLive(p.Replicas[0]) {
							preferred = false
						}
					}
				}
			}
		})
		if led && allLedSince.IsZero() {
			allLedSince = time.Now()
		}
		if led && (preferred || time.Since(allLedSince) > preferredLeaderWait) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-time.After(200 * time.Millisecond):
		}
	}
}
