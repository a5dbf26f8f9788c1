package rebalance

import (
	"fmt"
	"slices"
	"sort"
)

// Move is a partition's new replica list, the preferred leader first.
type Move struct {
	Topic    string
	Index    int32
	Replicas []int32
}

// spreader is a layout being changed move by move.
type spreader struct {
	*load
	parts   []Partition
	keep    []int32
	leaders map[int32]int
	busy    func(topic string, index int32) bool
	moved   map[int]bool
	moves   []Move
	limit   int
}

// Spread plans up to limit moves, at most one per partition, that empty
// the brokers not in keep (the partitions they lead first) and then even
// out the replicas and the preferred leaders over keep's brokers, until
// each broker holds within one of every other that the racks allow.
// Replicas stay on distinct racks where they were. Partitions for which busy is true (a move under
// way) are left alone. A partition with two replicas on one rack while a
// rack of keep holds none of them has one moved there first, as when
// zones are added to a cluster that had one. It fails when keep is too few brokers for a
// partition's replicas.
func Spread(l Layout, keep []int32, busy func(topic string, index int32) bool, limit int) ([]Move, error) {
	s := &spreader{load: newLoad(l), keep: slices.Sorted(slices.Values(keep)), leaders: map[int32]int{}, busy: busy, moved: map[int]bool{}, limit: limit}
	s.parts = make([]Partition, len(l.Partitions))
	for i, p := range l.Partitions {
		s.parts[i] = Partition{Topic: p.Topic, Index: p.Index, Replicas: slices.Clone(p.Replicas)}
		// A moving partition lists the replicas it is leaving too.
		if len(p.Replicas) > len(keep) && (busy == nil || !busy(p.Topic, p.Index)) {
			return nil, fmt.Errorf("%s-%d has %d replicas; %d brokers cannot hold them", p.Topic, p.Index, len(p.Replicas), len(keep))
		}
		if len(p.Replicas) > 0 {
			s.leaders[p.Replicas[0]]++
		}
	}
	sort.Slice(s.parts, func(i, j int) bool {
		a, b := s.parts[i], s.parts[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Index < b.Index
	})
	s.drain()
	s.separateRacks()
	s.evenReplicas()
	s.evenLeaders()
	return s.moves, nil
}

func (s *spreader) full() bool { return len(s.moves) >= s.limit }

func (s *spreader) free(i int) bool {
	p := s.parts[i]
	return !s.moved[i] && (s.busy == nil || !s.busy(p.Topic, p.Index))
}

func (s *spreader) kept(id int32) bool { return slices.Contains(s.keep, id) }

// record notes partition i's new replicas as a move.
func (s *spreader) record(i int, replicas []int32) {
	old := s.parts[i].Replicas
	for _, id := range old {
		s.replicas[id]--
	}
	for _, id := range replicas {
		s.replicas[id]++
	}
	s.leaders[old[0]]--
	s.leaders[replicas[0]]++
	s.parts[i].Replicas = replicas
	s.moved[i] = true
	s.moves = append(s.moves, Move{Topic: s.parts[i].Topic, Index: s.parts[i].Index, Replicas: slices.Clone(replicas)})
}

// drain replaces each replica on a broker outside keep, in its place, by
// the broker pick prefers among keep.
func (s *spreader) drain() {
	for _, leadersOnly := range []bool{true, false} {
		for i := range s.parts {
			p := s.parts[i]
			if s.full() || !s.free(i) || len(p.Replicas) == 0 || (leadersOnly && s.kept(p.Replicas[0])) || !slices.ContainsFunc(p.Replicas, func(id int32) bool { return !s.kept(id) }) {
				continue
			}
			replicas := slices.Clone(p.Replicas)
			for r, id := range replicas {
				if s.kept(id) {
					continue
				}
				others := slices.DeleteFunc(slices.Clone(replicas), func(x int32) bool { return x == id || !s.kept(x) })
				to, ok := s.pick(others, without(s.keep, replicas))
				if !ok {
					break
				}
				replicas[r] = to
			}
			if !slices.ContainsFunc(replicas, func(id int32) bool { return !s.kept(id) }) {
				s.record(i, replicas)
			}
		}
	}
}

// separateRacks moves, for each partition with two replicas on one rack,
// one of them (a follower, the most loaded broker's first) to the broker
// pick prefers on a rack of keep the partition does not use.
func (s *spreader) separateRacks() {
	for i := range s.parts {
		p := s.parts[i]
		if s.full() {
			return
		}
		if !s.free(i) || len(p.Replicas) < 2 {
			continue
		}
		used := s.racksOf(p.Replicas)
		var unused []int32
		for _, id := range s.keep {
			if used[s.rack[id]] == 0 {
				unused = append(unused, id)
			}
		}
		r := s.dropOne(p.Replicas)
		if len(unused) == 0 || used[s.rack[p.Replicas[r]]] < 2 {
			continue
		}
		others := slices.Delete(slices.Clone(p.Replicas), r, r+1)
		if to, ok := s.pick(others, unused); ok {
			replicas := slices.Clone(p.Replicas)
			replicas[r] = to
			s.record(i, replicas)
		}
	}
}

// evenReplicas moves one replica at a time from a broker of keep to one
// that holds at least two fewer, the most loaded pairs first, while any
// such move is left.
func (s *spreader) evenReplicas() {
	move := func(hi, lo int32) bool {
		i, r, ok := s.replicaToMove(hi, lo)
		if ok {
			replicas := slices.Clone(s.parts[i].Replicas)
			replicas[r] = lo
			s.record(i, replicas)
		}
		return ok
	}
	for !s.full() && s.evenOnce(s.replicas, move) {
		continue
	}
}

// evenOnce offers try the pairs of keep's brokers whose counts differ by
// more than one, the widest first, until it takes one.
func (s *spreader) evenOnce(count map[int32]int, try func(hi, lo int32) bool) bool {
	order := slices.Clone(s.keep)
	sort.SliceStable(order, func(a, b int) bool { return count[order[a]] < count[order[b]] })
	for h := len(order) - 1; h > 0; h-- {
		for l := 0; l < h && count[order[h]]-count[order[l]] > 1; l++ {
			if try(order[h], order[l]) {
				return true
			}
		}
	}
	return false
}

// replicaToMove finds a free partition with a replica on from, none on
// to, and no other replica on to's rack unless from shares it: a
// follower replica first, so that leadership moves less.
func (s *spreader) replicaToMove(from, to int32) (int, int, bool) {
	for _, followersOnly := range []bool{true, false} {
		for i := range s.parts {
			p := s.parts[i]
			r := slices.Index(p.Replicas, from)
			if r < 0 || (followersOnly && r == 0) || slices.Contains(p.Replicas, to) || !s.free(i) {
				continue
			}
			others := slices.Delete(slices.Clone(p.Replicas), r, r+1)
			if s.rack[to] != s.rack[from] && s.racksOf(others)[s.rack[to]] > 0 {
				continue
			}
			return i, r, true
		}
	}
	return 0, 0, false
}

// evenLeaders moves preferred leadership from a broker preferred at
// least two times more than another, while it can: along a chain of
// partitions, each led by a broker and holding the next, each partition's
// next broker becomes its preferred leader, so the first broker loses one,
// the last gains one and those between keep theirs. Only the order of
// replicas changes.
func (s *spreader) evenLeaders() {
	for !s.full() && s.leaderChain() {
		continue
	}
}

func (s *spreader) leaderChain() bool {
	order := slices.Clone(s.keep)
	sort.SliceStable(order, func(a, b int) bool { return s.leaders[order[a]] > s.leaders[order[b]] })
	type step struct {
		from int32
		part int
	}
	for _, hi := range order {
		prev := map[int32]step{hi: {part: -1}}
		for queue := []int32{hi}; len(queue) > 0; queue = queue[1:] {
			b := queue[0]
			for i := range s.parts {
				p := s.parts[i]
				if len(p.Replicas) == 0 || p.Replicas[0] != b || !s.free(i) {
					continue
				}
				for _, x := range p.Replicas[1:] {
					if _, seen := prev[x]; seen || !s.kept(x) {
						continue
					}
					prev[x] = step{from: b, part: i}
					if s.leaders[hi]-s.leaders[x] <= 1 {
						queue = append(queue, x)
						continue
					}
					for at := x; at != hi; at = prev[at].from {
						i := prev[at].part
						replicas := slices.Clone(s.parts[i].Replicas)
						r := slices.Index(replicas, at)
						replicas[0], replicas[r] = replicas[r], replicas[0]
						s.record(i, replicas)
					}
					return true
				}
			}
		}
	}
	return false
}

// without returns the ids of a that b lacks.
func without(a, b []int32) []int32 {
	return slices.DeleteFunc(slices.Clone(a), func(id int32) bool { return slices.Contains(b, id) })
}
