package autoscale

import (
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

func policy() Policy {
	return Policy{MinReplicas: 1, MaxReplicas: 10, LagThreshold: 100, PartitionScaling: true, MaxPartitions: 8,
		ScaleUpWindow: 0, ScaleDownWindow: 5 * time.Minute, StallAfter: 2 * time.Minute}
}

// step is one sync: the lag and committed offset of a single-partition
// view of the group, the partitions with leaders, and what must follow.
type step struct {
	at         time.Duration
	lag        int64
	committed  int64
	partitions int32
	current    int32
	want       int32
	grow       int32 // expected partition target, 0 for none
	stalled    bool
}

func run(t *testing.T, name string, p Policy, steps []step) {
	t.Helper()
	var st State
	for i, s := range steps {
		obs := Observation{Now: t0.Add(s.at), CurrentReplicas: s.current,
			LedPartitions: map[string]int32{"orders": s.partitions},
			Lags:          []PartitionLag{{Topic: "orders", Partition: 0, Committed: s.committed, Start: 0, End: max(s.committed, 0) + s.lag}}}
		d := Decide(obs, p, st)
		grow := d.GrowPartitions["orders"]
		if d.DesiredReplicas != s.want || grow != s.grow || d.Stalled != s.stalled {
			t.Fatalf("%s step %d (t+%v lag %d): desired %d grow %d stalled %v, want %d grow %d stalled %v (%s)",
				name, i, s.at, s.lag, d.DesiredReplicas, grow, d.Stalled, s.want, s.grow, s.stalled, d.Reason)
		}
		st = d.Next
	}
}

func TestSteadyGrowthGrowsPartitionsThenConsumers(t *testing.T) {
	run(t, "growth", policy(), []step{
		{at: 0, lag: 50, committed: 10, partitions: 2, current: 1, want: 1},
		{at: 15 * time.Second, lag: 250, committed: 20, partitions: 2, current: 1, want: 2, grow: 3},
		// 5 consumers wanted, 2 partitions: grow to 5 first, keep 2 consumers.
		{at: 30 * time.Second, lag: 450, committed: 30, partitions: 2, current: 2, want: 2, grow: 5},
		// The new partitions have leaders: now the consumers follow.
		{at: 45 * time.Second, lag: 450, committed: 40, partitions: 5, current: 2, want: 5},
	})
}

func TestBoundsAndMaxPartitions(t *testing.T) {
	run(t, "bounds", policy(), []step{
		{at: 0, lag: 0, committed: 5, partitions: 8, current: 3, want: 3}, // no scale-down before the window
		{at: 6 * time.Minute, lag: 0, committed: 5, partitions: 8, current: 3, want: 1},
		// Far beyond max replicas and max partitions: capped at 8 partitions, 8 consumers.
		{at: 7 * time.Minute, lag: 100000, committed: 6, partitions: 8, current: 1, want: 8},
	})
	p := policy()
	p.PartitionScaling = false
	run(t, "no partition scaling", p, []step{
		{at: 0, lag: 1000, committed: 5, partitions: 3, current: 1, want: 3},
	})
}

func TestSpikeAndFlappingWaitForTheScaleDownWindow(t *testing.T) {
	run(t, "spike", policy(), []step{
		{at: 0, lag: 10, committed: 1, partitions: 8, current: 1, want: 1},
		{at: 15 * time.Second, lag: 600, committed: 2, partitions: 8, current: 1, want: 6},
		{at: 30 * time.Second, lag: 20, committed: 600, partitions: 8, current: 6, want: 6},
		{at: 2 * time.Minute, lag: 700, committed: 800, partitions: 8, current: 6, want: 7},
		{at: 3 * time.Minute, lag: 10, committed: 1500, partitions: 8, current: 7, want: 7},
		// 5 minutes after the last high recommendation, not after the first.
		{at: 6 * time.Minute, lag: 10, committed: 1510, partitions: 8, current: 7, want: 7},
		{at: 7*time.Minute + time.Second, lag: 10, committed: 1520, partitions: 8, current: 7, want: 1},
	})
	p := policy()
	p.ScaleUpWindow = time.Minute
	run(t, "scale-up window", p, []step{
		{at: 0, lag: 10, committed: 1, partitions: 8, current: 1, want: 1},
		{at: 15 * time.Second, lag: 500, committed: 2, partitions: 8, current: 1, want: 1}, // one sample is not enough
		{at: 61 * time.Second, lag: 500, committed: 3, partitions: 8, current: 1, want: 5},
	})
}

func TestStalledGroupIsNotScaledWithoutBound(t *testing.T) {
	run(t, "stalled", policy(), []step{
		{at: 0, lag: 100, committed: 50, partitions: 8, current: 1, want: 1},
		{at: 30 * time.Second, lag: 300, committed: 50, partitions: 8, current: 1, want: 3}, // not yet stalled
		{at: 3 * time.Minute, lag: 500, committed: 50, partitions: 8, current: 3, want: 3, stalled: true},
		{at: 4 * time.Minute, lag: 800, committed: 50, partitions: 8, current: 3, want: 3, stalled: true},
		// It commits again: scaling resumes.
		{at: 5 * time.Minute, lag: 800, committed: 60, partitions: 8, current: 3, want: 8},
	})
}

func TestNewGroupWithoutCommits(t *testing.T) {
	run(t, "earliest", policy(), []step{
		{at: 0, lag: 400, committed: -1, partitions: 8, current: 1, want: 4},
		{at: 10 * time.Minute, lag: 900, committed: -1, partitions: 8, current: 4, want: 8}, // never stalled: it never committed
	})
	p := policy()
	p.ResetLatest = true
	run(t, "latest", p, []step{
		{at: 0, lag: 400, committed: -1, partitions: 8, current: 1, want: 1},
	})
}

func TestLagOnOnePartitionOnly(t *testing.T) {
	p := policy()
	obs := Observation{Now: t0, CurrentReplicas: 1, LedPartitions: map[string]int32{"orders": 4, "audit": 2},
		Lags: []PartitionLag{
			{Topic: "orders", Partition: 0, Committed: 0, End: 0},
			{Topic: "orders", Partition: 3, Committed: 100, End: 420},
			{Topic: "audit", Partition: 0, Committed: 5, End: 5},
		}}
	d := Decide(obs, p, State{})
	// 320 records need 4 consumers; audit has 2 partitions, so it grows to 4.
	if d.TotalLag != 320 || d.DesiredReplicas != 2 || d.GrowPartitions["audit"] != 4 || d.GrowPartitions["orders"] != 0 {
		t.Fatalf("%+v", d)
	}
}
