package replica

import (
	"testing"

	"github.com/raftka/raftka/broker/meta"
)

// TestLeaderUnreachable: a follower's replica is woken when the leader it
// knows is on an unreachable peer, or when it knows none while a peer is.
func TestLeaderUnreachable(t *testing.T) {
	self, on1, on2 := meta.RaftNodeID(0, 1), meta.RaftNodeID(1, 1), meta.RaftNodeID(2, 3)
	down1 := map[int32]bool{1: true}
	for _, c := range []struct {
		name        string
		leader      uint64
		known       bool
		unreachable map[int32]bool
		want        bool
	}{
		{"leader on the unreachable peer", on1, true, down1, true},
		{"leader on another peer", on2, true, down1, false},
		{"this replica leads", self, true, map[int32]bool{0: true}, false},
		{"no leader known, a peer unreachable", 0, false, down1, true},
		{"no leader known, every peer answers", 0, false, map[int32]bool{}, false},
		{"leader known as 0", 0, true, down1, true},
	} {
		if got := leaderUnreachable(self, c.leader, c.known, c.unreachable); got != c.want {
			t.Errorf("%s: leaderUnreachable = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestNeedsFollowerWake: a led group is kept awake while a follower asked
// does not answer (its replica is not started yet), and woken once more
// when it first answers (it started, and knows no leader yet).
func TestNeedsFollowerWake(t *testing.T) {
	for _, c := range []struct {
		name   string
		asked  []int32
		before map[int32]bool
		known  bool
		ends   map[int32]int64
		want   bool
	}{
		{"both answer, as before", []int32{1, 2}, map[int32]bool{1: true, 2: true}, true, map[int32]int64{1: 5, 2: 5}, false},
		{"one does not answer", []int32{1, 2}, map[int32]bool{1: true, 2: true}, true, map[int32]int64{1: 5}, true},
		{"one answers for the first time", []int32{1, 2}, map[int32]bool{1: true}, true, map[int32]int64{1: 5, 2: 0}, true},
		{"first round led, both answer", []int32{1, 2}, nil, false, map[int32]int64{1: 5, 2: 5}, false},
		{"first round led, one silent", []int32{1, 2}, nil, false, map[int32]int64{2: 5}, true},
		{"no follower asked (peers down)", nil, map[int32]bool{1: true}, true, nil, false},
	} {
		if got := needsFollowerWake(c.asked, c.before, c.known, c.ends); got != c.want {
			t.Errorf("%s: needsFollowerWake = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestStandsFirst: of a group's followers, the first in preferred order on
// a reachable broker is woken at once; the others wait.
func TestStandsFirst(t *testing.T) {
	on1 := meta.RaftNodeID(1, 1)
	down1 := map[int32]bool{1: true}
	for _, c := range []struct {
		name        string
		self        int32
		replicas    []int32
		leader      uint64
		known       bool
		unreachable map[int32]bool
		want        bool
	}{
		{"first follower", 0, []int32{1, 0, 2}, on1, true, down1, true},
		{"second follower", 2, []int32{1, 0, 2}, on1, true, down1, false},
		{"first follower is unreachable too", 2, []int32{1, 0, 2}, on1, true, map[int32]bool{0: true, 1: true}, true},
		{"no leader known: the first reachable", 2, []int32{1, 2, 0}, 0, false, down1, true},
		{"no leader known: not first", 0, []int32{1, 2, 0}, 0, false, down1, false},
	} {
		if got := standsFirst(c.self, c.replicas, c.leader, c.known, c.unreachable); got != c.want {
			t.Errorf("%s: standsFirst = %v, want %v", c.name, got, c.want)
		}
	}
}
