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

// A topic whose ordered growth still holds its consumers is not grown
// again: the autoscaler waits for the lift, keeping the consumers at the
// partitions that exist, and grows once the growth lifted.
func TestNoGrowthWhileAGrowthHolds(t *testing.T) {
	p := policy()
	obs := Observation{Now: t0, CurrentReplicas: 3, LedPartitions: map[string]int32{"orders": 3},
		Lags:    []PartitionLag{{Topic: "orders", Partition: 0, Committed: 0, End: 600}},
		Growing: map[string]bool{"orders": true}}
	d := Decide(obs, p, State{})
	if len(d.GrowPartitions) != 0 || d.DesiredReplicas != 3 || len(d.Waiting) != 1 {
		t.Fatalf("while growing: grow %v, desired %d, waiting %v (%s)", d.GrowPartitions, d.DesiredReplicas, d.Waiting, d.Reason)
	}
	obs.Growing = nil
	if d := Decide(obs, p, State{}); d.GrowPartitions["orders"] != 6 {
		t.Fatalf("after the lift: grow %v, want orders to 6 (%s)", d.GrowPartitions, d.Reason)
	}
}

// KEDA's knobs: scale to zero below the activation lag and wake above
// it; at most one consumer per partition with lag; the lag of a partition
// whose commit stands still left out of the count.
func TestActivationPartitionsWithLagAndPersistentLag(t *testing.T) {
	lags := func(committed ...int64) []PartitionLag {
		out := make([]PartitionLag, len(committed))
		for i, c := range committed {
			out[i] = PartitionLag{Topic: "orders", Partition: int32(i), Committed: c, End: 1000}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		policy  func(*Policy)
		current int32
		prev    []int64 // committed offsets at the last sync, nil for none
		now     []int64
		want    int32
	}{
		{"idle at zero stays at zero", func(p *Policy) { p.MinReplicas, p.ActivationLag = 0, 50 }, 0, nil, lags4(1000), 0},
		{"lag at the activation threshold does not wake it", func(p *Policy) { p.MinReplicas, p.ActivationLag = 0, 50 }, 0, nil, []int64{950, 1000, 1000, 1000}, 0},
		{"lag above it wakes it", func(p *Policy) { p.MinReplicas, p.ActivationLag = 0, 50 }, 0, nil, []int64{940, 1000, 1000, 1000}, 1},
		{"without the limit, one hot partition asks for its lag's consumers", func(*Policy) {}, 1, nil, []int64{0, 1000, 1000, 1000}, 8},
		{"with the limit, one per partition with lag", func(p *Policy) { p.LimitToPartitionsWithLag = true }, 1, nil, []int64{0, 1000, 1000, 1000}, 1},
		{"persistent lag counted by default", func(*Policy) {}, 1, []int64{200, 200, 1000, 1000}, []int64{200, 200, 1000, 1000}, 8},
		{"persistent lag excluded", func(p *Policy) { p.ExcludePersistentLag = true }, 1, []int64{200, 200, 1000, 1000}, []int64{200, 300, 1000, 1000}, 7},
	} {
		p := policy()
		p.MaxPartitions = 0
		p.PartitionScaling = false
		tc.policy(&p)
		var prev State
		if tc.prev != nil {
			prev = Decide(Observation{Now: t0.Add(-15 * time.Second), CurrentReplicas: tc.current, LedPartitions: map[string]int32{"orders": 4}, Lags: lags(tc.prev...)}, p, State{}).Next
			prev.Recommendations = nil
		}
		obs := Observation{Now: t0, CurrentReplicas: tc.current, LedPartitions: map[string]int32{"orders": 8}, Lags: lags(tc.now...)}
		if d := Decide(obs, p, prev); d.DesiredReplicas != tc.want {
			t.Errorf("%s: desired %d, want %d (%s; counted lag %d)", tc.name, d.DesiredReplicas, tc.want, d.Reason, d.CountedLag)
		}
	}
}

func lags4(committed int64) []int64 { return []int64{committed, committed, committed, committed} }

// A group at rest on a transactional topic has its commits one short of
// each end, the marker; with the markers counted as skipped it scales to
// zero, as it would on a topic without transactions.
func TestTransactionMarkersAreNoLag(t *testing.T) {
	p := policy()
	p.MinReplicas, p.PartitionScaling = 0, false
	var lags []PartitionLag
	for i := range int32(4) {
		lags = append(lags, PartitionLag{Topic: "orders", Partition: i, Committed: 999, End: 1000, Skipped: 1})
	}
	obs := Observation{Now: t0, CurrentReplicas: 0, LedPartitions: map[string]int32{"orders": 4}, Lags: lags}
	if d := Decide(obs, p, State{}); d.DesiredReplicas != 0 || d.TotalLag != 0 {
		t.Fatalf("at rest past every record: desired %d, lag %d; want 0 and 0 (%s)", d.DesiredReplicas, d.TotalLag, d.Reason)
	}
	for i := range lags {
		lags[i].Skipped = 0
	}
	if d := Decide(obs, p, State{}); d.DesiredReplicas != 1 {
		t.Fatalf("with the markers counted as records: desired %d, want 1 (the lag of 4 wakes it)", d.DesiredReplicas)
	}
	if l := (Policy{ResetLatest: true}).Lag(PartitionLag{Committed: -1, Start: 0, End: 10, Skipped: 3}); l != 0 {
		t.Fatalf("a group without commits that starts at the end: lag %d, want 0", l)
	}
}
