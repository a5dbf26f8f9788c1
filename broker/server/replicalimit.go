package server

import (
	"fmt"
	"slices"
	"strings"

	"github.com/raftka/raftka/broker/internal/openfiles"
	"github.com/raftka/raftka/broker/meta"
)

// replicaLimitMessage says why placement refused new replicas with
// POLICY_VIOLATION (meta.PlacementCapacity): the brokers with the least
// room left, and what a broker's limit comes from.
func (srv *Server) replicaLimitMessage() string {
	type room struct {
		id          int32
		held, limit int
	}
	var rooms []room
	srv.Meta.Read(func(s *meta.State) {
		counts := s.ReplicaCounts()
		for _, id := range s.BrokerIDs() {
			if br, _ := s.Broker(id); br.MaxReplicas > 0 {
				rooms = append(rooms, room{id, counts[id], int(br.MaxReplicas)})
			}
		}
	})
	slices.SortStableFunc(rooms, func(a, b room) int { return (a.limit - a.held) - (b.limit - b.held) })
	var least []string
	for _, r := range rooms[:min(3, len(rooms))] {
		least = append(least, fmt.Sprintf("broker %d holds %d of its %d", r.id, r.held, r.limit))
	}
	return fmt.Sprintf("too few brokers have room for the new replicas (%s). A broker's replica limit comes from its open-file limit "+
		"(ulimit -n): %d files per replica, beside a tenth of the limit kept for connections. Raise it, or add brokers",
		strings.Join(least, "; "), openfiles.PerReplica)
}
