package integration

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

// unregisterBroker sends UnregisterBroker, as kafka-cluster.sh unregister
// does.
func unregisterBroker(ctx context.Context, t *testing.T, c *brokertest.Cluster, id int32) (string, error) {
	t.Helper()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(ctx, c.Client())
	if err != nil {
		t.Fatal(err)
	}
	msg := ""
	if resp.ErrorMessage != nil {
		msg = *resp.ErrorMessage
	}
	return msg, kerr.ErrorForCode(resp.ErrorCode)
}

// registeredBrokers lists the brokers DescribeCluster v2 names, fenced
// ones included.
func registeredBrokers(ctx context.Context, t *testing.T, c *brokertest.Cluster) []int32 {
	t.Helper()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	resp, err := req.RequestWith(ctx, c.Client())
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids
}

// TestUnregisterBrokerOnceItLeft: a broker that left for good is
// forgotten once it is stopped and holds no replica, and new partitions
// are then placed on the others only. Unregistering a running broker, one
// that still holds a replica, a metadata voter or an unknown id is
// refused and changes nothing. The broker's old data directory is then
// refused at start; on an empty one it joins with a later generation.
func TestUnregisterBrokerOnceItLeft(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c.CreateTopicOn("leaving", [][]int32{{3, 0, 1}})
	refused := func(id int32, want error, says string) {
		t.Helper()
		if msg, err := unregisterBroker(ctx, t, c, id); !errors.Is(err, want) || !strings.Contains(msg, says) {
			t.Fatalf("unregister broker %d: %v %q, want %v saying %q", id, err, msg, want, says)
		}
	}
	// A stopped broker's peers notice within a few seconds; until then
	// the refusal says it runs.
	refusedOnceStopped := func(id int32, want error, says string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			msg, err := unregisterBroker(ctx, t, c, id)
			if !strings.Contains(msg, "running") || time.Now().After(deadline) {
				if !errors.Is(err, want) || !strings.Contains(msg, says) {
					t.Fatalf("unregister stopped broker %d: %v %q, want %v saying %q", id, err, msg, want, says)
				}
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	refused(3, kerr.InvalidRequest, "running")
	c.Stop(3)
	if !c.WaitExit(3, 30*time.Second) {
		t.Fatal("broker 3 did not stop")
	}
	refusedOnceStopped(3, kerr.InvalidRequest, "replicas")
	c.Stop(2)
	c.WaitExit(2, 30*time.Second)
	refusedOnceStopped(2, kerr.InvalidRequest, "votes")
	c.Restart(2)
	c.WaitReady(2)
	if got := registeredBrokers(ctx, t, c); !slices.Equal(got, []int32{0, 1, 2, 3}) {
		t.Fatalf("registered after the refusals: %v", got)
	}

	if err := reassign(ctx, t, c.Admin(), "leaving", 0, []int32{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	waitMoved(ctx, t, c.Admin(), "leaving", 0, []int32{0, 1, 2})
	if msg, err := unregisterBroker(ctx, t, c, 3); err != nil {
		t.Fatalf("unregister broker 3: %v %s", err, msg)
	}
	if got := registeredBrokers(ctx, t, c); !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("registered after unregistering broker 3: %v", got)
	}
	refused(3, kerr.BrokerIDNotRegistered, "not registered")
	c.CreateTopic("after", 6, 3, nil)
	for p := int32(0); p < 6; p++ {
		if r := replicasOf(ctx, t, c.Admin(), "after", p); slices.Contains(r, 3) {
			t.Fatalf("partition %d of a new topic placed on unregistered broker 3: %v", p, r)
		}
	}

	c.Restart(3)
	if !c.WaitExit(3, 60*time.Second) {
		t.Fatal("broker 3 started on the data directory of an unregistered incarnation")
	}
	c.LoseDisk(3)
	c.Restart(3)
	c.WaitReady(3)
	if v, _ := c.Metric(3, "raftka_broker_generation"); v != 2 {
		t.Errorf("broker 3 rejoined as generation %v, want 2", v)
	}
}
