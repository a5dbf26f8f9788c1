package groups

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) advance(d time.Duration) { c.now = c.now.Add(d) }

func newTestCoordinator() (*Coordinator, *clock) {
	clk := &clock{now: time.Unix(1_000_000, 0)}
	return NewCoordinator(Config{Now: clk.Now, InitialRebalanceDelay: 3 * time.Second}), clk
}

func joinReq(memberID string, instance string, meta string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.SetVersion(9)
	r.Group, r.MemberID, r.ProtocolType = "g", memberID, "consumer"
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10_000, 30_000
	if instance != "" {
		r.InstanceID = kmsg.StringPtr(instance)
	}
	r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte(meta)}}
	return r
}

// received returns the value on ch if one is there now.
func received[T any](t *testing.T, ch <-chan T) (T, bool) {
	t.Helper()
	select {
	case v := <-ch:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

// join performs the KIP-394 two-step join and returns the pending wait.
func join(t *testing.T, c *Coordinator, instance string) (string, <-chan *kmsg.JoinGroupResponse) {
	t.Helper()
	if instance != "" {
		return "", c.Join(joinReq("", instance, "m"), "client", "/127.0.0.1")
	}
	first, ok := received(t, c.Join(joinReq("", "", "m"), "client", "/127.0.0.1"))
	if !ok || first.ErrorCode != kerr.MemberIDRequired.Code || first.MemberID == "" {
		t.Fatalf("first join: %+v", first)
	}
	return first.MemberID, c.Join(joinReq(first.MemberID, "", "m"), "client", "/127.0.0.1")
}

func syncReq(member string, gen int32, assignments map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Group, r.MemberID, r.Generation = "g", member, gen
	for m, a := range assignments {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(a)})
	}
	return r
}

func heartbeat(c *Coordinator, member string, gen int32) *kerr.Error {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Group, r.MemberID, r.Generation = "g", member, gen
	return c.Heartbeat(r)
}

// stableGroup brings two members to a stable generation.
func stableGroup(t *testing.T, c *Coordinator, clk *clock) (a, b string, gen int32) {
	t.Helper()
	a, wa := join(t, c, "")
	b, wb := join(t, c, "")
	if _, early := received(t, wa); early {
		t.Fatal("join completed within the initial rebalance delay")
	}
	clk.advance(3 * time.Second)
	c.tick()
	ra, okA := received(t, wa)
	rb, okB := received(t, wb)
	if !okA || !okB {
		t.Fatal("join did not complete once every member had joined")
	}
	if ra.Generation != rb.Generation || ra.LeaderID != a || len(ra.Members) != 2 || len(rb.Members) != 0 {
		t.Fatalf("join responses: %+v / %+v", ra, rb)
	}
	sb := c.Sync(syncReq(b, rb.Generation, nil))
	if _, done := received(t, sb); done {
		t.Fatal("follower sync answered before the leader's")
	}
	sa := c.Sync(syncReq(a, ra.Generation, map[string]string{a: "A", b: "B"}))
	got, _ := received(t, sa)
	gotB, _ := received(t, sb)
	if string(got.MemberAssignment) != "A" || string(gotB.MemberAssignment) != "B" {
		t.Fatalf("assignments %q %q", got.MemberAssignment, gotB.MemberAssignment)
	}
	return a, b, ra.Generation
}

func TestJoinSyncReachesStableGeneration(t *testing.T) {
	c, clk := newTestCoordinator()
	a, b, gen := stableGroup(t, c, clk)
	if d, _ := c.Describe("g"); d.State != StateStable || len(d.Members) != 2 {
		t.Fatalf("described %+v", d)
	}
	for _, tc := range []struct {
		member string
		gen    int32
		want   *kerr.Error
	}{
		{a, gen, nil}, {b, gen, nil}, {a, gen - 1, kerr.IllegalGeneration}, {"stranger", gen, kerr.UnknownMemberID},
	} {
		if got := heartbeat(c, tc.member, tc.gen); got != tc.want {
			t.Errorf("heartbeat %s gen %d: %v, want %v", tc.member, tc.gen, got, tc.want)
		}
	}
	if err := c.ValidateCommit("g", a, nil, gen); err != nil {
		t.Errorf("commit by member: %v", err)
	}
	if err := c.ValidateCommit("g", "", nil, -1); err != kerr.UnknownMemberID {
		t.Errorf("generation -1 commit to a live group: %v", err)
	}
}

func TestSessionExpiryTriggersRebalance(t *testing.T) {
	c, clk := newTestCoordinator()
	a, b, gen := stableGroup(t, c, clk)
	// a keeps heartbeating, b goes silent.
	for i := 0; i < 12; i++ {
		clk.advance(time.Second)
		if err := heartbeat(c, a, gen); err != nil && err != kerr.RebalanceInProgress {
			t.Fatalf("live member heartbeat: %v", err)
		}
		c.tick()
	}
	if err := heartbeat(c, b, gen); err != kerr.UnknownMemberID {
		t.Fatalf("expired member heartbeat: %v", err)
	}
	if err := heartbeat(c, a, gen); err != kerr.RebalanceInProgress {
		t.Fatalf("survivor heartbeat: %v", err)
	}
	w := c.Join(joinReq(a, "", "m"), "client", "h")
	r, ok := received(t, w)
	if !ok || r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("rejoin: %+v", r)
	}
}

func TestMemberThatDoesNotRejoinIsDroppedAtRebalanceTimeout(t *testing.T) {
	c, clk := newTestCoordinator()
	a, b, gen := stableGroup(t, c, clk)
	w := c.Join(joinReq(a, "", "changed"), "client", "h") // a's subscription changed
	if _, done := received(t, w); done {
		t.Fatal("join completed while b had not rejoined")
	}
	clk.advance(31 * time.Second)
	c.tick()
	r, ok := received(t, w)
	if !ok || r.Generation != gen+1 || len(r.Members) != 1 || r.Members[0].MemberID != a {
		t.Fatalf("join after timeout: %+v", r)
	}
	if err := heartbeat(c, b, gen); err != kerr.UnknownMemberID {
		t.Fatalf("dropped member: %v", err)
	}
}

func TestStaticMemberRestartKeepsAssignmentWithoutRebalance(t *testing.T) {
	c, clk := newTestCoordinator()
	_, w1 := join(t, c, "pod-0")
	_, w2 := join(t, c, "pod-1")
	clk.advance(3 * time.Second)
	c.tick()
	r1, _ := received(t, w1)
	r2, _ := received(t, w2)
	leader, follower := r1, r2
	if r2.LeaderID == r2.MemberID {
		leader, follower = r2, r1
	}
	c.Sync(syncReq(follower.MemberID, follower.Generation, nil))
	c.Sync(syncReq(leader.MemberID, leader.Generation, map[string]string{leader.MemberID: "L", follower.MemberID: "F"}))
	clk.advance(time.Second)

	instance := "pod-0"
	if follower.MemberID != r1.MemberID {
		instance = "pod-1"
	}
	again, ok := received(t, c.Join(joinReq("", instance, "m"), "client", "h"))
	if !ok || again.ErrorCode != 0 || again.Generation != follower.Generation || again.MemberID == follower.MemberID {
		t.Fatalf("static rejoin: %+v", again)
	}
	s, _ := received(t, c.Sync(syncReq(again.MemberID, again.Generation, nil)))
	if string(s.MemberAssignment) != "F" {
		t.Fatalf("static member's assignment after restart: %q", s.MemberAssignment)
	}
	if err := heartbeat(c, follower.MemberID, follower.Generation); err != kerr.UnknownMemberID && err != kerr.FencedInstanceID {
		t.Fatalf("old incarnation: %v", err)
	}
	if d, _ := c.Describe("g"); d.State != StateStable {
		t.Fatalf("group %s after a static restart, want Stable", d.State)
	}
}

func TestLeavingEmptiesTheGroup(t *testing.T) {
	c, clk := newTestCoordinator()
	a, b, _ := stableGroup(t, c, clk)
	if err := c.Delete("g"); err != kerr.NonEmptyGroup {
		t.Fatalf("delete live group: %v", err)
	}
	_, errs := c.Leave("g", []kmsg.LeaveGroupRequestMember{{MemberID: a}, {MemberID: b}, {MemberID: "ghost"}})
	if errs[0] != nil || errs[1] != nil || errs[2] != kerr.UnknownMemberID {
		t.Fatalf("leave errors %v", errs)
	}
	if d, _ := c.Describe("g"); d.State != StateEmpty {
		t.Fatalf("state %s after everyone left", d.State)
	}
	if err := c.ValidateCommit("g", "", nil, -1); err != nil {
		t.Fatalf("simple commit to an empty group: %v", err)
	}
	if err := c.Delete("g"); err != nil {
		t.Fatal(err)
	}
}

func TestJoinRejectsBadInput(t *testing.T) {
	c, _ := newTestCoordinator()
	short := joinReq("", "", "m")
	short.SessionTimeoutMillis = 100
	if r, _ := received(t, c.Join(short, "c", "h")); r.ErrorCode != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("short session: %+v", r)
	}
	join(t, c, "")
	other := joinReq("", "", "m")
	other.SetVersion(3)
	other.ProtocolType = "connect"
	if r, _ := received(t, c.Join(other, "c", "h")); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("other protocol type: %+v", r)
	}
}

// TestSubscribedTo: a consumer group counts as subscribed to the topics
// its members' consumer-protocol metadata lists, from its join, and no
// longer once they left; metadata that does not parse subscribes to
// nothing.
func TestSubscribedTo(t *testing.T) {
	c, _ := newTestCoordinator()
	sub := kmsg.NewConsumerMemberMetadata()
	sub.Topics = []string{"orders", "audit"}
	req := joinReq("", "", "")
	req.Protocols[0].Metadata = sub.AppendTo(nil)
	first, _ := received(t, c.Join(req, "client", "/127.0.0.1"))
	req.MemberID = first.MemberID
	c.Join(req, "client", "/127.0.0.1")
	garbled := joinReq("", "", "not consumer metadata")
	garbled.Group = "other"
	pending, _ := received(t, c.Join(garbled, "client", "/127.0.0.1"))
	garbled.MemberID = pending.MemberID
	c.Join(garbled, "client", "/127.0.0.1")
	if d, _ := c.Describe("other"); len(d.Members) != 1 {
		t.Fatalf("group other has %d members, want 1", len(d.Members))
	}

	for topic, want := range map[string][]string{"orders": {"g"}, "audit": {"g"}, "payments": nil} {
		if got := c.SubscribedTo(topic); !slices.Equal(got, want) {
			t.Errorf("SubscribedTo(%q) = %v, want %v", topic, got, want)
		}
	}
	if err, _ := c.Leave("g", []kmsg.LeaveGroupRequestMember{{MemberID: first.MemberID}}); err != nil {
		t.Fatal(err)
	}
	if got := c.SubscribedTo("orders"); len(got) != 0 {
		t.Errorf("SubscribedTo after the member left = %v", got)
	}
}
