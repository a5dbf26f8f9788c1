package meta

import (
	"slices"

	"github.com/raftka/raftka/broker/quota"
)

// QuotaChange sets and removes quota values of one entity.
type QuotaChange struct {
	Entity quota.Entity
	Set    map[string]float64 `json:",omitempty"`
	Remove []string           `json:",omitempty"`
}

// AlterClientQuotas changes client quotas (Kafka's AlterClientQuotas); the
// proposing broker checked each change.
type AlterClientQuotas struct {
	Changes []QuotaChange
}

func (s *State) alterClientQuotas(c *AlterClientQuotas) Outcome {
	for _, ch := range c.Changes {
		i := slices.IndexFunc(s.clientQuotas, func(q quota.Config) bool { return q.Entity.Equal(ch.Entity) })
		if i < 0 {
			if len(ch.Set) == 0 {
				continue
			}
			s.clientQuotas = append(s.clientQuotas, quota.Config{Entity: ch.Entity, Values: map[string]float64{}})
			i = len(s.clientQuotas) - 1
		}
		values := s.clientQuotas[i].Values
		for _, k := range ch.Remove {
			delete(values, k)
		}
		for k, v := range ch.Set {
			values[k] = v
		}
		if len(values) == 0 {
			s.clientQuotas = slices.Delete(s.clientQuotas, i, i+1)
		}
	}
	if len(s.clientQuotas) == 0 {
		s.clientQuotas = nil // as a snapshot restores it
	}
	return Outcome{}
}
