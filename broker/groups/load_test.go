package groups

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/raftka/raftka/broker/meta"
)

// TestATakingOverCoordinatorKeepsTheGroup: the next coordinator starts
// from the recorded membership, so the members go on at their generation,
// and a member that is gone expires into a rebalance whose generation is
// higher than any before. Without the record (the load switched off) the
// same heartbeat is UNKNOWN_MEMBER_ID and the group starts again at 1.
func TestATakingOverCoordinatorKeepsTheGroup(t *testing.T) {
	old, clk := newTestCoordinator()
	a, b, gen := stableGroup(t, old, clk)
	d, _ := old.Describe("g")
	rec := d.Recorded()

	next := NewCoordinator(Config{Now: clk.Now, Recorded: func(group string) (meta.GroupMetadata, bool) { return rec, group == "g" }})
	for _, m := range []string{a, b} {
		if err := heartbeat(next, m, gen); err != nil {
			t.Fatalf("heartbeat of %s at generation %d on the next coordinator: %v", m, gen, err)
		}
	}
	if err := next.ValidateCommit("g", a, nil, gen); err != nil {
		t.Fatalf("commit on the next coordinator: %v", err)
	}
	got, ok := next.Describe("g")
	if !ok || got.State != StateStable || got.Generation != gen || got.Leader != a || len(got.Members) != 2 ||
		string(got.Members[0].Assignment) != "A" || string(got.Members[1].Assignment) != "B" {
		t.Fatalf("the next coordinator holds %+v", got)
	}
	// b is gone: a keeps heartbeating, b's session runs out.
	for range 11 {
		clk.advance(time.Second)
		_ = heartbeat(next, a, gen)
		next.tick()
	}
	if err := heartbeat(next, a, gen); err != kerr.RebalanceInProgress {
		t.Fatalf("after b's session ran out a heartbeat got %v, want REBALANCE_IN_PROGRESS", err)
	}
	r, ok := received(t, next.Join(joinReq(a, "", "m"), "client", "/127.0.0.1"))
	if !ok || r.ErrorCode != 0 || r.Generation != gen+1 || r.LeaderID != a {
		t.Fatalf("a's rejoin: %+v", r)
	}

	forgetful := NewCoordinator(Config{Now: clk.Now})
	if err := heartbeat(forgetful, a, gen); err != kerr.UnknownMemberID {
		t.Fatalf("without the record a heartbeat got %v, want UNKNOWN_MEMBER_ID", err)
	}
}

// TestARecordedEmptyGroupKeepsCounting: an emptied group's next
// generation on a new coordinator follows the recorded one.
func TestARecordedEmptyGroupKeepsCounting(t *testing.T) {
	clk := &clock{now: time.Unix(1_000_000, 0)}
	c := NewCoordinator(Config{Now: clk.Now, Recorded: func(string) (meta.GroupMetadata, bool) {
		return meta.GroupMetadata{ProtocolType: "consumer", Generation: 7}, true
	}})
	_, w := join(t, c, "")
	c.tick()
	r, ok := received(t, w)
	if !ok || r.Generation != 8 {
		t.Fatalf("first join after the takeover: %+v", r)
	}
}
