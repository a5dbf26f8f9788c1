// Package autoscale decides how many consumers a consumer group should run
// and how many partitions its topics need for them. Decide is a pure
// function of the observation, the policy, the previous state and the
// time, so every rule is table-tested with lag series.
package autoscale

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// PartitionLag is one partition as observed.
type PartitionLag struct {
	Topic     string
	Partition int32
	Committed int64 // -1: the group has no committed offset here
	Start     int64
	End       int64
	// Skipped are the offsets between the group's position (its commit,
	// or Start without one) and End that hold no record a consumer is
	// given: transaction markers and aborted records (internal/lag).
	Skipped int64
}

// Observation is one sync's view of the world.
type Observation struct {
	Now  time.Time
	Lags []PartitionLag
	// LedPartitions is, per topic, how many partitions exist and have a
	// leader: consumers beyond that would idle.
	LedPartitions   map[string]int32
	CurrentReplicas int32
	// Growing are the topics whose ordered growth is in progress
	// (docs/design/ordered-growth.md): one is not grown again until it
	// lifts, since its consumers wait at the hold and more partitions
	// would only stack another hold behind it.
	Growing map[string]bool
}

// Policy is the ConsumerGroup's spec, with defaults applied.
type Policy struct {
	MinReplicas, MaxReplicas int32
	LagThreshold             int64
	// ResetLatest: a partition without a commit starts at the end (the
	// group's auto.offset.reset=latest) and so has no lag.
	ResetLatest      bool
	PartitionScaling bool
	MaxPartitions    int32
	ScaleUpWindow    time.Duration
	ScaleDownWindow  time.Duration
	// StallAfter: lag that grows while committed offsets stand still for
	// this long marks the group stalled; it is not scaled up further.
	StallAfter time.Duration
	// ActivationLag: with MinReplicas 0, a lag at or below it asks for no
	// consumer at all.
	ActivationLag int64
	// LimitToPartitionsWithLag caps the consumers at the partitions with
	// lag.
	LimitToPartitionsWithLag bool
	// ExcludePersistentLag leaves out of the count the lag of partitions
	// whose committed offset stood still since the last sync.
	ExcludePersistentLag bool
}

// Recommendation is a past raw recommendation, for stabilization.
type Recommendation struct {
	At       time.Time
	Replicas int32
}

// State carries what Decide needs from earlier syncs.
type State struct {
	Recommendations []Recommendation
	Committed       int64 // sum of committed offsets at the last sync
	LastProgress    time.Time
	Lag             int64
	// Offsets are the committed offsets of the last sync, by partition.
	Offsets map[Partition]int64
}

// Partition names a topic's partition.
type Partition struct {
	Topic string
	Index int32
}

// Decision is what to do now.
type Decision struct {
	TotalLag int64
	// CountedLag is the lag the consumers are counted from: TotalLag less
	// the persistent lag, when excluded.
	CountedLag      int64
	DesiredReplicas int32
	// GrowPartitions: topic -> new partition count. Replicas follow once
	// the new partitions have leaders, at a later sync.
	GrowPartitions map[string]int32
	// Waiting are the topics that need more partitions but are still
	// growing (Observation.Growing).
	Waiting []string
	Stalled bool
	Reason  string
	Next    State
}

// Lag is a partition's lag under the policy's reset rule.
func (p Policy) Lag(l PartitionLag) int64 {
	from := l.Committed
	if from < 0 {
		from = l.Start
		if p.ResetLatest {
			return 0
		}
	}
	return max(l.End-from-l.Skipped, 0)
}

// Decide computes the desired consumers and partitions.
func Decide(obs Observation, p Policy, prev State) Decision {
	d := Decision{Next: State{Committed: prev.Committed, LastProgress: prev.LastProgress}}
	committed, lagging := d.measure(obs, p, prev)
	if committed != prev.Committed || d.TotalLag == 0 {
		d.Next.LastProgress = obs.Now
	}
	raw := d.rawReplicas(p, lagging)

	// Stalled: lag grows, nothing is committed any more, and the group did
	// commit before (a new group may still be starting).
	if !prev.LastProgress.IsZero() && d.TotalLag > prev.Lag && committed == prev.Committed &&
		obs.Now.Sub(prev.LastProgress) >= p.StallAfter {
		d.Stalled = true
		raw = min(raw, max(obs.CurrentReplicas, p.MinReplicas))
	}

	history := append(seed(prev.Recommendations, obs), Recommendation{At: obs.Now, Replicas: raw})
	d.Next.Recommendations = trim(history, obs.Now, max(p.ScaleUpWindow, p.ScaleDownWindow))
	desired := stabilize(d.Next.Recommendations, raw, obs.CurrentReplicas, obs.Now, p)

	// Consumers never exceed the partitions of the topic with fewest.
	fewest := int32(-1)
	for _, n := range obs.LedPartitions {
		if fewest < 0 || n < fewest {
			fewest = n
		}
	}
	if fewest >= 0 && desired > fewest {
		if p.PartitionScaling {
			target := desired
			if p.MaxPartitions > 0 {
				target = min(target, p.MaxPartitions)
			}
			for _, topic := range sortedTopics(obs.LedPartitions) {
				if n := obs.LedPartitions[topic]; n < target && obs.Growing[topic] {
					d.Waiting = append(d.Waiting, topic)
				} else if n < target {
					if d.GrowPartitions == nil {
						d.GrowPartitions = map[string]int32{}
					}
					d.GrowPartitions[topic] = target
				}
			}
		}
		desired = fewest
	}
	d.DesiredReplicas = desired
	d.Reason = reason(d, obs, raw, p)
	return d
}

// measure sums the lag and the committed offsets, and counts the
// partitions with lag; the lag of a partition whose commit stood still
// since the last sync is left out of CountedLag, and of the count, when
// the policy excludes persistent lag.
func (d *Decision) measure(obs Observation, p Policy, prev State) (committed int64, lagging int32) {
	d.Next.Offsets = map[Partition]int64{}
	for _, l := range obs.Lags {
		lag := p.Lag(l)
		d.TotalLag += lag
		if l.Committed > 0 {
			committed += l.Committed
		}
		at := Partition{l.Topic, l.Partition}
		d.Next.Offsets[at] = l.Committed
		if was, ok := prev.Offsets[at]; p.ExcludePersistentLag && ok && l.Committed >= 0 && was == l.Committed && lag > 0 {
			continue // persistent
		}
		d.CountedLag += lag
		if lag > 0 {
			lagging++
		}
	}
	d.Next.Committed, d.Next.Lag = committed, d.TotalLag
	return committed, lagging
}

// rawReplicas is the consumers the counted lag asks for, before
// stabilization: one per LagThreshold, none below the activation lag when
// the target may scale to zero, at most one per partition with lag when
// the policy limits them so, within the bounds.
func (d *Decision) rawReplicas(p Policy, lagging int32) int32 {
	raw := int32(0)
	if p.LagThreshold > 0 {
		raw = int32(min((d.CountedLag+p.LagThreshold-1)/p.LagThreshold, int64(p.MaxReplicas)))
	}
	if p.MinReplicas == 0 && d.CountedLag <= p.ActivationLag {
		raw = 0
	}
	if p.LimitToPartitionsWithLag {
		raw = min(raw, lagging)
	}
	return clamp(raw, p.MinReplicas, p.MaxReplicas)
}

// seed starts an empty history at the current replicas, so that a fresh
// operator waits a whole window before scaling down.
func seed(h []Recommendation, obs Observation) []Recommendation {
	if len(h) == 0 {
		return []Recommendation{{At: obs.Now, Replicas: obs.CurrentReplicas}}
	}
	return h
}

func trim(h []Recommendation, now time.Time, window time.Duration) []Recommendation {
	out := h[:0:0]
	for _, r := range h {
		if now.Sub(r.At) <= window {
			out = append(out, r)
		}
	}
	return out
}

// stabilize follows the HPA: scale up to the lowest recommendation of the
// scale-up window, down to the highest of the scale-down window.
func stabilize(h []Recommendation, raw, current int32, now time.Time, p Policy) int32 {
	switch {
	case raw > current:
		up := raw
		for _, r := range h {
			if p.ScaleUpWindow > 0 && now.Sub(r.At) <= p.ScaleUpWindow {
				up = min(up, r.Replicas)
			}
		}
		return max(current, up)
	case raw < current:
		down := raw
		for _, r := range h {
			if now.Sub(r.At) <= p.ScaleDownWindow {
				down = max(down, r.Replicas)
			}
		}
		return min(current, down)
	}
	return current
}

func reason(d Decision, obs Observation, raw int32, p Policy) string {
	switch {
	case d.Stalled:
		return fmt.Sprintf("lag %d grows while no offsets are committed: consumers look stuck, not scaling up", d.TotalLag)
	case len(d.GrowPartitions) > 0:
		return fmt.Sprintf("lag %d needs %d consumers: growing partitions first", d.TotalLag, raw)
	case len(d.Waiting) > 0:
		return fmt.Sprintf("lag %d needs %d consumers: waiting for the growth of %s to lift before growing it again", d.TotalLag, raw, strings.Join(d.Waiting, ", "))
	case d.DesiredReplicas > obs.CurrentReplicas:
		return fmt.Sprintf("lag %d over threshold %d per consumer", d.TotalLag, p.LagThreshold)
	case d.DesiredReplicas < obs.CurrentReplicas:
		return fmt.Sprintf("lag %d stayed low for the scale-down window", d.TotalLag)
	case raw < obs.CurrentReplicas:
		return "lag is low: waiting for the scale-down window"
	}
	return fmt.Sprintf("lag %d within threshold", d.TotalLag)
}

func clamp(v, lo, hi int32) int32 { return max(lo, min(v, hi)) }

func sortedTopics(m map[string]int32) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
