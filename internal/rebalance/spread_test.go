package rebalance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// layoutOn places n partitions of topic t with rf replicas round-robin
// over the given brokers, as a cluster of that size would.
func layoutOn(b []Broker, on []int32, n, rf int) Layout {
	l := Layout{Brokers: b}
	for i := 0; i < n; i++ {
		var replicas []int32
		for r := 0; r < rf; r++ {
			replicas = append(replicas, on[(i+r)%len(on)])
		}
		l.Partitions = append(l.Partitions, Partition{Topic: "t", Index: int32(i), Replicas: replicas})
	}
	return l
}

// settle applies Spread's moves round after round, as the controller
// does once each round's moves completed, and returns the rounds taken.
func settle(t *testing.T, l *Layout, keep []int32, limit int) int {
	t.Helper()
	for round := 1; round <= 100; round++ {
		moves, err := Spread(*l, keep, nil, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(moves) == 0 {
			return round
		}
		for _, m := range moves {
			for i := range l.Partitions {
				if l.Partitions[i].Topic == m.Topic && l.Partitions[i].Index == m.Index {
					if len(m.Replicas) != len(l.Partitions[i].Replicas) {
						t.Fatalf("move %+v changes the replication factor of %v", m, l.Partitions[i].Replicas)
					}
					l.Partitions[i].Replicas = m.Replicas
				}
			}
		}
	}
	t.Fatal("no fixed point after 100 rounds")
	return 0
}

// checkEven fails unless keep's brokers hold every replica, within one of
// each other in replicas and in preferred leaders, each partition on
// distinct brokers (and racks, if distinctRacks).
func checkEven(t *testing.T, l Layout, keep []int32, distinctRacks bool) {
	t.Helper()
	rack := map[int32]string{}
	for _, b := range l.Brokers {
		rack[b.ID] = b.Rack
	}
	replicas, leaders := map[int32]int{}, map[int32]int{}
	for _, p := range l.Partitions {
		leaders[p.Replicas[0]]++
		seen, racks := map[int32]bool{}, map[string]bool{}
		for _, id := range p.Replicas {
			if !slices.Contains(keep, id) || seen[id] || (distinctRacks && racks[rack[id]]) {
				t.Fatalf("partition %d on %v", p.Index, p.Replicas)
			}
			seen[id], racks[rack[id]] = true, true
			replicas[id]++
		}
	}
	spread := func(what string, count map[int32]int) {
		lo, hi := 1<<30, 0
		var parts []string
		for _, id := range keep {
			lo, hi = min(lo, count[id]), max(hi, count[id])
			parts = append(parts, fmt.Sprintf("%d:%d", id, count[id]))
		}
		if hi-lo > 1 {
			t.Errorf("%s per broker differ by %d: %s", what, hi-lo, strings.Join(parts, " "))
		}
	}
	spread("replicas", replicas)
	spread("preferred leaders", leaders)
}

func TestSpreadScalesOutEvenly(t *testing.T) {
	l := layoutOn(brokers("", "", "", "", ""), []int32{0, 1, 2}, 10, 3)
	keep := []int32{0, 1, 2, 3, 4}
	rounds := settle(t, &l, keep, 4)
	checkEven(t, l, keep, false)
	if rounds < 3 {
		t.Errorf("settled in %d rounds of 4 moves: the bound was not kept", rounds)
	}
}

func TestSpreadDrainsBrokersLeadersFirst(t *testing.T) {
	l := layoutOn(brokers("", "", "", "", ""), []int32{0, 1, 2, 3, 4}, 12, 3)
	keep := []int32{0, 1, 2}
	moves, err := Spread(l, keep, nil, 1)
	if err != nil || len(moves) != 1 {
		t.Fatalf("moves %v %v", moves, err)
	}
	first := l.Partitions[moves[0].Index].Replicas[0]
	if slices.Contains(keep, first) {
		t.Errorf("first move is of partition %d led by broker %d, which stays; a drained broker's leadership goes first", moves[0].Index, first)
	}
	settle(t, &l, keep, 5)
	checkEven(t, l, keep, false)
}

func TestSpreadKeepsRacksDistinct(t *testing.T) {
	b := brokers("a", "b", "c", "a", "b", "c")
	l := layoutOn(b, []int32{0, 1, 2}, 9, 3) // every partition on racks a, b and c
	keep := []int32{0, 1, 2, 3, 4, 5}
	settle(t, &l, keep, 3)
	checkEven(t, l, keep, true)
}

// A cluster whose partitions all sit on racks a, a and b gains brokers on
// racks b and c: every partition ends on three racks. Evenness is what
// the racks allow: the single broker of rack c holds every partition.
func TestSpreadSeparatesReplicasSharingARack(t *testing.T) {
	b := brokers("a", "a", "b", "b", "c")
	l := layoutOn(b, []int32{0, 1, 2}, 9, 3)
	keep := []int32{0, 1, 2, 3, 4}
	settle(t, &l, keep, 4)
	rack := map[int32]string{}
	for _, x := range b {
		rack[x.ID] = x.Rack
	}
	count := map[int32]int{}
	for _, p := range l.Partitions {
		racks := map[string]bool{}
		for _, id := range p.Replicas {
			racks[rack[id]] = true
			count[id]++
		}
		if len(racks) != 3 {
			t.Errorf("partition %d on %v: racks not distinct", p.Index, p.Replicas)
		}
	}
	if count[4] != 9 || count[0]+count[1] != 9 || count[2]+count[3] != 9 || max(count[0], count[1])-min(count[0], count[1]) > 1 || max(count[2], count[3])-min(count[2], count[3]) > 1 {
		t.Errorf("replicas per broker %v: want each rack's share even among its brokers", count)
	}
}

func TestSpreadLeavesBusyPartitionsAndBalancedClusters(t *testing.T) {
	l := layoutOn(brokers("", "", "", ""), []int32{0, 1, 2}, 4, 3)
	moves, err := Spread(l, []int32{0, 1, 2, 3}, func(string, int32) bool { return true }, 10)
	if err != nil || len(moves) != 0 {
		t.Fatalf("moved busy partitions: %v %v", moves, err)
	}
	// A partition moving off a fourth broker lists 4 replicas meanwhile.
	moving := layoutOn(brokers("", "", "", ""), []int32{0, 1, 2}, 3, 3)
	moving.Partitions[0].Replicas = []int32{0, 1, 2, 3}
	if _, err := Spread(moving, []int32{0, 1, 2}, func(_ string, i int32) bool { return i == 0 }, 10); err != nil {
		t.Fatalf("a move under way counted as too many replicas: %v", err)
	}
	even := layoutOn(brokers("", "", ""), []int32{0, 1, 2}, 6, 3)
	if moves, _ := Spread(even, []int32{0, 1, 2}, nil, 10); len(moves) != 0 {
		t.Fatalf("moves in a balanced cluster: %v", moves)
	}
}

func TestSpreadRefusesTooFewBrokers(t *testing.T) {
	l := layoutOn(brokers("", "", ""), []int32{0, 1, 2}, 2, 3)
	if _, err := Spread(l, []int32{0, 1}, nil, 10); err == nil {
		t.Fatal("replication factor 3 on 2 brokers was planned")
	}
}

func TestSpreadSettlesEvenlyFromAnyShape(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := seed * 2654435761
		next := func(n uint64) int { r = r*6364136223846793005 + 1442695040888963407; return int((r >> 33) % n) }
		total := 3 + next(5)
		rf := 1 + next(3)
		on := make([]int32, 0, total)
		for id := 0; id < rf+next(uint64(total-rf+1)); id++ {
			on = append(on, int32(id))
		}
		keep := make([]int32, 0, total)
		for id := total - 1; id >= 0 && len(keep) < rf+next(uint64(total-rf+1)); id-- {
			keep = append(keep, int32(id))
		}
		slices.Sort(keep)
		l := layoutOn(brokers(make([]string, total)...), on, 1+next(30), rf)
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			settle(t, &l, keep, 1+next(6))
			checkEven(t, l, keep, false)
		})
	}
}

// Brokers on random racks, partitions placed without regard to them:
// Spread reaches a fixed point at which each partition spans as many
// racks as its replicas and keep's racks allow.
func TestSpreadSettlesOnDistinctRacksFromAnyShape(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := seed * 2246822519
		next := func(n uint64) int { r = r*6364136223846793005 + 1442695040888963407; return int((r >> 33) % n) }
		total := 3 + next(5)
		racks := make([]string, total)
		for i := range racks {
			racks[i] = string(rune('a' + next(3)))
		}
		rf := 1 + next(3)
		on := []int32{}
		for id := 0; id < rf+next(uint64(total-rf+1)); id++ {
			on = append(on, int32(id))
		}
		keep := []int32{}
		for id := total - 1; id >= 0 && len(keep) < rf+next(uint64(total-rf+1)); id-- {
			keep = append(keep, int32(id))
		}
		slices.Sort(keep)
		keptRacks := map[string]bool{}
		for _, id := range keep {
			keptRacks[racks[id]] = true
		}
		l := layoutOn(brokers(racks...), on, 1+next(30), rf)
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			settle(t, &l, keep, 1+next(6))
			for _, p := range l.Partitions {
				spans := map[string]bool{}
				for _, id := range p.Replicas {
					if !slices.Contains(keep, id) {
						t.Fatalf("partition %d on %v, keep %v", p.Index, p.Replicas, keep)
					}
					spans[racks[id]] = true
				}
				if len(spans) != min(rf, len(keptRacks)) {
					t.Fatalf("partition %d on %v spans racks %v of %v", p.Index, p.Replicas, spans, keptRacks)
				}
			}
		})
	}
}
