package rebalance

import (
	"fmt"
	"slices"
	"sort"
)

// Broker is a broker and its rack ("" without one).
type Broker struct {
	ID   int32
	Rack string
}

// Partition is a partition and its replicas, the preferred leader first.
type Partition struct {
	Topic    string
	Index    int32
	Replicas []int32
}

// Layout is a cluster's brokers and partitions.
type Layout struct {
	Brokers    []Broker
	Partitions []Partition
}

// load counts the replicas each broker holds, and knows their racks.
type load struct {
	replicas map[int32]int
	rack     map[int32]string
	ids      []int32 // ascending
}

func newLoad(l Layout) *load {
	ld := &load{replicas: map[int32]int{}, rack: map[int32]string{}}
	for _, b := range l.Brokers {
		ld.rack[b.ID] = b.Rack
		ld.replicas[b.ID] += 0
		ld.ids = append(ld.ids, b.ID)
	}
	slices.Sort(ld.ids)
	for _, p := range l.Partitions {
		for _, id := range p.Replicas {
			ld.replicas[id]++
		}
	}
	return ld
}

func (ld *load) racksOf(replicas []int32) map[string]int {
	out := map[string]int{}
	for _, id := range replicas {
		out[ld.rack[id]]++
	}
	return out
}

// pick chooses a broker among candidates to add to replicas: one on a
// rack replicas do not use yet, then the least loaded, then the lowest id.
func (ld *load) pick(replicas []int32, candidates []int32) (int32, bool) {
	used := ld.racksOf(replicas)
	best, found := int32(0), false
	for _, id := range candidates {
		if slices.Contains(replicas, id) {
			continue
		}
		if !found || better(used[ld.rack[id]], ld.replicas[id], id, used[ld.rack[best]], ld.replicas[best], best) {
			best, found = id, true
		}
	}
	return best, found
}

func better(rackUse, replicas int, id int32, bestRackUse, bestReplicas int, bestID int32) bool {
	if (rackUse == 0) != (bestRackUse == 0) {
		return rackUse == 0
	}
	if replicas != bestReplicas {
		return replicas < bestReplicas
	}
	return id < bestID
}

// dropOne chooses which replica of a list to drop: never the first (the
// preferred leader), one whose rack another replica shares, then the
// most loaded broker, then the highest id.
func (ld *load) dropOne(replicas []int32) int {
	used := ld.racksOf(replicas)
	worst := -1
	for i := 1; i < len(replicas); i++ {
		id := replicas[i]
		if worst < 0 {
			worst = i
			continue
		}
		w := replicas[worst]
		shared, wShared := used[ld.rack[id]] > 1, used[ld.rack[w]] > 1
		switch {
		case shared != wShared:
			if shared {
				worst = i
			}
		case ld.replicas[id] != ld.replicas[w]:
			if ld.replicas[id] > ld.replicas[w] {
				worst = i
			}
		case id > w:
			worst = i
		}
	}
	return worst
}

// ReplicationFactor returns, for each partition of topic whose replica
// count is not rf, its new replica list: replicas added on the brokers
// pick prefers, or dropped as dropOne chooses. It fails when rf exceeds
// the brokers.
func ReplicationFactor(l Layout, topic string, rf int) (map[int32][]int32, error) {
	if rf < 1 || rf > len(l.Brokers) {
		return nil, fmt.Errorf("replication factor %d needs %d brokers; the cluster has %d", rf, rf, len(l.Brokers))
	}
	ld := newLoad(l)
	out := map[int32][]int32{}
	parts := slices.Clone(l.Partitions)
	sort.Slice(parts, func(i, j int) bool { return parts[i].Index < parts[j].Index })
	for _, p := range parts {
		if p.Topic != topic || len(p.Replicas) == rf {
			continue
		}
		replicas := slices.Clone(p.Replicas)
		for len(replicas) < rf {
			id, ok := ld.pick(replicas, ld.ids)
			if !ok {
				return nil, fmt.Errorf("no broker left for a replica of %s-%d", topic, p.Index)
			}
			replicas = append(replicas, id)
			ld.replicas[id]++
		}
		for len(replicas) > rf {
			i := ld.dropOne(replicas)
			ld.replicas[replicas[i]]--
			replicas = slices.Delete(replicas, i, i+1)
		}
		out[p.Index] = replicas
	}
	return out, nil
}
