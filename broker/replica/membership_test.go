package replica

import (
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/meta"
)

func TestNextMemberChange(t *testing.T) {
	n := meta.RaftNodeID
	set := func(ids ...uint64) map[uint64]string {
		out := map[uint64]string{}
		for _, id := range ids {
			out[id] = "addr"
		}
		return out
	}
	gone := func(ids ...uint64) map[uint64]struct{} {
		out := map[uint64]struct{}{}
		for _, id := range ids {
			out[id] = struct{}{}
		}
		return out
	}
	want := func(nodes ...uint64) []replicaNode {
		var out []replicaNode
		for _, node := range nodes {
			out = append(out, replicaNode{broker: meta.BrokerOfNode(node), node: node, addr: "a"})
		}
		return out
	}
	upTo := func(ids ...int32) func(int32) bool {
		return func(id int32) bool {
			for _, c := range ids {
				if c == id {
					return true
				}
			}
			return false
		}
	}
	// Broker 2 lost its disk: its replica is node (2, 5) now, was (2, 1).
	lost := groupPlan{want: want(n(0, 1), n(1, 1), n(2, 5)), observersFirst: true, self: n(0, 1)}
	// A move of {0, 1, 2} to {1, 3, 4}, led by broker 0.
	move := groupPlan{want: want(n(1, 1), n(3, 6), n(4, 6)), reassigning: true, observersFirst: true, self: n(0, 1)}
	cases := []struct {
		name     string
		view     groupView
		plan     groupPlan
		caughtUp func(int32) bool
		want     memberChange
	}{
		{"settled", groupView{voters: set(n(0, 1), n(1, 1), n(2, 5))}, lost, upTo(), memberChange{}},
		{"the lost replica's node goes first", groupView{voters: set(n(0, 1), n(1, 1), n(2, 1))}, lost, upTo(2),
			memberChange{kind: removeNode, broker: 2, node: n(2, 1)}},
		{"then the new node joins as an observer", groupView{voters: set(n(0, 1), n(1, 1)), removed: gone(n(2, 1))}, lost, upTo(),
			memberChange{kind: addObserver, broker: 2, node: n(2, 5), addr: "a"}},
		{"with the pebble store, as a voter", groupView{voters: set(n(0, 1), n(1, 1))},
			groupPlan{want: lost.want, self: lost.self}, upTo(), memberChange{kind: addVoter, broker: 2, node: n(2, 5), addr: "a"}},
		{"an observer behind stays one", groupView{voters: set(n(0, 1), n(1, 1)), observers: set(n(2, 5))}, lost, upTo(0, 1), memberChange{}},
		{"a caught-up observer is promoted", groupView{voters: set(n(0, 1), n(1, 1)), observers: set(n(2, 5))}, lost, upTo(2),
			memberChange{kind: promote, broker: 2, node: n(2, 5), addr: "a"}},
		{"a wanted node that was removed is renewed, never added again", groupView{voters: set(n(0, 1), n(1, 1)), removed: gone(n(2, 5))}, lost, upTo(),
			memberChange{kind: renewNode, broker: 2, node: n(2, 5)}},
		{"a newer node than the metadata knows stays", groupView{voters: set(n(0, 1), n(1, 1), n(2, 9))}, lost, upTo(), memberChange{}},

		{"a move adds its new replicas as observers", groupView{voters: set(n(0, 1), n(1, 1), n(2, 1))}, move, upTo(0, 1, 2),
			memberChange{kind: addObserver, broker: 3, node: n(3, 6), addr: "a"}},
		{"nothing leaves before every target replica votes", groupView{voters: set(n(0, 1), n(1, 1), n(2, 1), n(3, 6)), observers: set(n(4, 6))}, move, upTo(0, 1, 2, 3),
			memberChange{}},
		{"then the old replicas leave", groupView{voters: set(n(0, 1), n(1, 1), n(2, 1), n(3, 6), n(4, 6))}, move, upTo(1, 3, 4),
			memberChange{kind: removeNode, broker: 2, node: n(2, 1)}},
		{"the leader leaving hands over first", groupView{voters: set(n(0, 1), n(1, 1), n(3, 6), n(4, 6))}, move, upTo(3, 4),
			memberChange{kind: transferLeader, broker: 3, node: n(3, 6)}},
		{"not to a replica behind", groupView{voters: set(n(0, 1), n(1, 1), n(3, 6), n(4, 6))}, move, upTo(), memberChange{}},
		{"the new leader completes the move", groupView{voters: set(n(1, 1), n(3, 6), n(4, 6))},
			groupPlan{want: move.want, reassigning: true, observersFirst: true, self: n(3, 6)}, upTo(), memberChange{kind: completeMove}},
		{"a cancelled move removes what it added", groupView{voters: set(n(0, 1), n(1, 1), n(2, 1)), observers: set(n(3, 6))},
			groupPlan{want: want(n(0, 1), n(1, 1), n(2, 1)), reassigning: true, observersFirst: true, self: n(0, 1)}, upTo(),
			memberChange{kind: removeNode, broker: 3, node: n(3, 6)}},
	}
	for _, c := range cases {
		got := nextMemberChange(c.view, c.plan, c.caughtUp)
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestLostLeaders: the groups to wake are the partition groups that had a
// leader and have known none for the time asked; not the metadata group,
// nor those still joining, nor those that lost their leader more
// recently.
func TestLostLeaders(t *testing.T) {
	now := time.Unix(1000, 0)
	m := &memberships{leaderless: map[uint64]time.Time{
		100:                now.Add(-3 * time.Second),
		101:                now.Add(-time.Second),
		102:                now.Add(-time.Minute),
		meta.MetadataShard: now.Add(-time.Minute),
	}, led: map[uint64]bool{100: true, 101: true, meta.MetadataShard: true}}
	if got := m.lostLeaders(now, 2*time.Second); !slices.Equal(got, []uint64{100}) {
		t.Fatalf("leaderless for 2 s: %v, want [100]", got)
	}
}
