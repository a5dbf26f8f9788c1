package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/brokerclient"
)

// metadataQuorum asks DescribeQuorum, as kafka-metadata-quorum.sh
// describe --status does, for the voters and observers.
func metadataQuorum(ctx context.Context, t *testing.T, c *brokertest.Cluster) (voters, observers []int32) {
	t.Helper()
	voters, observers, err := readQuorum(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return voters, observers
}

// readQuorum is metadataQuorum's answer, or why there is none: the
// metadata group may be electing (REQUEST_TIMED_OUT), or name a leader
// that is not a voter.
func readQuorum(ctx context.Context, c *brokertest.Cluster) (voters, observers []int32, err error) {
	q, err := brokerclient.ReadQuorum(ctx, c.Client())
	if err != nil {
		return nil, nil, fmt.Errorf("DescribeQuorum: %w", err)
	}
	if q.Leader < 0 || !slices.Contains(q.Voters, q.Leader) {
		return nil, nil, fmt.Errorf("DescribeQuorum: leader %d is not among the voters %v", q.Leader, q.Voters)
	}
	return q.Voters, q.Observers, nil
}

// changeVoter sends AddRaftVoter or RemoveRaftVoter for a broker.
func changeVoter(ctx context.Context, t *testing.T, c *brokertest.Cluster, add bool, id int32) (string, error) {
	t.Helper()
	var code int16
	var msg *string
	if add {
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID = id
		resp, err := req.RequestWith(ctx, c.Client())
		if err != nil {
			t.Fatal(err)
		}
		code, msg = resp.ErrorCode, resp.ErrorMessage
	} else {
		req := kmsg.NewPtrRemoveRaftVoterRequest()
		req.VoterID = id
		resp, err := req.RequestWith(ctx, c.Client())
		if err != nil {
			t.Fatal(err)
		}
		code, msg = resp.ErrorCode, resp.ErrorMessage
	}
	if msg == nil {
		return "", kerr.ErrorForCode(code)
	}
	return *msg, kerr.ErrorForCode(code)
}

// waitQuorum waits until DescribeQuorum names these voters.
func waitQuorum(ctx context.Context, t *testing.T, c *brokertest.Cluster, want []int32) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		// A broker just restarted may find the group electing: asked
		// again, as a client would (CI saw REQUEST_TIMED_OUT here once).
		voters, _, err := readQuorum(ctx, c)
		if err == nil && slices.Equal(voters, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metadata voters %v (%v), want %v", voters, err, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMetadataVotersFollowTheCluster: a cluster founded by one voter
// grows its metadata quorum with AddRaftVoter (refused for another
// cluster's id, another incarnation's directory id, an unknown broker or
// a voter), its promoted voters vote after restarts, and it survives the loss
// of its founder's disk: the founder rejoins the cluster as a voter (it
// must not found a new one, though it alone founded the first). A voter
// is removed with RemoveRaftVoter only once it hosts no replica and while
// the voters left keep a live majority; the removed broker is then not
// ready and may be unregistered, and the two voters left keep the
// metadata. Nothing acknowledged is lost throughout.
func TestMetadataVotersFollowTheCluster(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, FoundingVoters: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if voters, observers := metadataQuorum(ctx, t, c); !slices.Equal(voters, []int32{0}) || !slices.Equal(observers, []int32{1, 2}) {
		t.Fatalf("founded with voters %v observers %v, want [0] and [1 2]", voters, observers)
	}
	expect := func(add bool, id int32, want error, says string) {
		t.Helper()
		msg, err := changeVoter(ctx, t, c, add, id)
		if !errors.Is(err, want) || (want != nil && !strings.Contains(msg, says)) {
			t.Fatalf("voter change (add %v) of broker %d: %v %q, want %v saying %q", add, id, err, msg, want, says)
		}
	}
	wrongKeys := kmsg.NewPtrAddRaftVoterRequest()
	wrongKeys.VoterID, wrongKeys.ClusterID = 1, kmsg.StringPtr("another-cluster")
	if resp, err := wrongKeys.RequestWith(ctx, c.Client()); err != nil || resp.ErrorCode != kerr.InconsistentClusterID.Code {
		t.Fatalf("AddRaftVoter for another cluster: %v %+v", err, resp)
	}
	wrongKeys.ClusterID, wrongKeys.VoterDirectoryID = nil, [16]byte{1, 2, 3}
	if resp, err := wrongKeys.RequestWith(ctx, c.Client()); err != nil || resp.ErrorCode != kerr.InvalidVoterKey.Code {
		t.Fatalf("AddRaftVoter for another incarnation: %v %+v", err, resp)
	}
	expect(true, 7, kerr.VoterNotFound, "not registered")
	expect(false, 1, kerr.VoterNotFound, "does not vote")
	expect(true, 1, nil, "")
	expect(true, 2, nil, "")
	expect(true, 2, kerr.DuplicateVoter, "already")
	waitQuorum(ctx, t, c, []int32{0, 1, 2})

	// The promoted voters restart as voters, also once a snapshot of the
	// metadata (every 1,000 entries; each offset commit is one) lists
	// them as such: with broker 2 down, broker 1 must vote for a change.
	for i := 0; i < 1100; i++ {
		offsets := kadm.Offsets{}
		offsets.AddOffset("snapshot", 0, int64(i), -1)
		if _, err := c.Admin().CommitOffsets(ctx, "snapshotting", offsets); err != nil {
			t.Fatal(err)
		}
	}
	c.Kill(1)
	c.Restart(1)
	c.WaitReady(1)
	c.Kill(2)
	c.CreateTopicOn("voted-by-1", [][]int32{{0, 1}})
	c.Restart(2)
	c.WaitReady(2)
	waitQuorum(ctx, t, c, []int32{0, 1, 2})
	if _, err := c.Admin().DeleteTopics(ctx, "voted-by-1"); err != nil {
		t.Fatal(err)
	}

	c.CreateTopicOn("kept", [][]int32{{0, 1, 2}, {1, 2, 0}})
	c.CreateTopicOn("leaving", [][]int32{{2, 0, 1}})
	acks := brokertest.NewLedger()
	produceAcked(ctx, t, c, acks, "kept", "before", 200)

	// The founder loses its disk: the two voters it added keep the
	// metadata, and it comes back as a new incarnation that votes again.
	c.Kill(0)
	c.LoseDisk(0)
	c.CreateTopicOn("without-founder", [][]int32{{1, 2}})
	c.Restart(0)
	c.WaitReady(0)
	if v, _ := c.Metric(0, "raftka_broker_generation"); v != 1 {
		t.Fatalf("the founder came back as generation %v, want 1: it did not join the cluster", v)
	}
	waitQuorum(ctx, t, c, []int32{0, 1, 2})
	if d, err := c.Admin().ListTopics(ctx); err != nil || !d.Has("without-founder") {
		t.Fatalf("the founder's new incarnation does not see the topic made without it: %v", err)
	}
	waitFullyReplicated(t, c, "kept", 0)
	produceAcked(ctx, t, c, acks, "kept", "after-founder", 200)

	expect(false, 2, kerr.InvalidRequest, "hosts partition replicas")
	for _, move := range []struct {
		topic     string
		partition int32
		target    []int32
	}{{"leaving", 0, []int32{0, 1}}, {"kept", 0, []int32{0, 1}}, {"kept", 1, []int32{1, 0}}, {"without-founder", 0, []int32{1, 0}}} {
		if err := reassign(ctx, t, c.Admin(), move.topic, move.partition, move.target); err != nil {
			t.Fatal(err)
		}
		waitMoved(ctx, t, c.Admin(), move.topic, move.partition, move.target)
	}
	// With broker 1 down, the voters left without 2 would be 0 and a
	// silent 1: no quorum.
	c.Stop(1)
	c.WaitExit(1, 30*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for {
		msg, err := changeVoter(ctx, t, c, false, 2)
		if errors.Is(err, kerr.InvalidRequest) && strings.Contains(msg, "no quorum") {
			break
		}
		if err == nil || time.Now().After(deadline) {
			t.Fatalf("removing voter 2 while voter 1 is down: %v %q, want a refusal for want of a quorum", err, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.Restart(1)
	c.WaitReady(1)
	waitQuorum(ctx, t, c, []int32{0, 1, 2})

	expect(false, 2, nil, "")
	waitQuorum(ctx, t, c, []int32{0, 1})
	// The removed broker learns of its removal on its own, a moment after
	// the leader reports the new voters.
	waitFor(t, 15*time.Second, "the removed voter to report its removal in its readiness", func() bool {
		code, body := c.Get(2, "/readyz")
		return code != 200 && strings.Contains(body, "removed from the metadata group")
	})
	c.Stop(2)
	c.WaitExit(2, 30*time.Second)
	deadline = time.Now().Add(30 * time.Second)
	for {
		msg, err := unregisterBroker(ctx, t, c, 2)
		if err == nil {
			break
		}
		if !strings.Contains(msg, "running") || time.Now().After(deadline) {
			t.Fatalf("unregister the removed voter: %v %s", err, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.CreateTopicOn("two-voters", [][]int32{{0, 1}})
	produceAcked(ctx, t, c, acks, "kept", "two-voters", 200)
	acks.VerifyExactlyOnce(t, "kept", c.Client)
}
