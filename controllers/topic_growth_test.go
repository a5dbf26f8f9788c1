package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	eventsv1 "k8s.io/api/events/v1"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

// TestTopicStatusFollowsAnOrderedGrowth: a Topic grown by its spec shows
// the growth holding its consumers, with the group that has not read the
// old partitions yet; a group that never commits again holds it only
// until raftka.growth.max.hold.ms, and the lift at the bound is a Warning
// Event on the Topic and its last lift in the status.
func TestTopicStatusFollowsAnOrderedGrowth(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, brokerCluster(ns))
	topic := topicObject(ns, "growing-orders", 2)
	topic.Spec.Config["raftka.growth.max.hold.ms"] = "6000"
	mustCreate(t, topic)
	readyIs(t, ns, "growing-orders", "True", raftkav1.ReasonCreated)

	ctx := context.Background()
	cl := brokers.Client()
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "growing-orders", Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "growing-orders", Partition: 0, At: 0, LeaderEpoch: -1})
	if _, err := brokers.Admin().CommitOffsets(ctx, "stuck-readers", offsets); err != nil {
		t.Fatal(err)
	}
	if err := updateTopic(t, ns, "growing-orders", func(t *raftkav1.Topic) { t.Spec.Partitions = 3 }); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the growth holding in the status", func() (bool, string) {
		g := getTopic(t, ns, "growing-orders").Status.Growth
		if g == nil {
			return false, "no growth"
		}
		return g.Phase == raftkav1.GrowthHolding && g.From == 2 && g.To == 3 && g.HeldSince != nil && len(g.Splits) == 2 &&
			slices.Equal(g.DrainingGroups, []string{"stuck-readers"}), fmt.Sprintf("%+v", *g)
	})
	eventually(t, "the growth lifted at its bound", func() (bool, string) {
		st := getTopic(t, ns, "growing-orders").Status
		return st.Growth == nil && st.LastGrowthLift != nil && st.LastGrowthLift.Reason == raftkav1.GrowthBound && st.LastGrowthLift.Growth == 1,
			fmt.Sprintf("growth %+v, last lift %+v", st.Growth, st.LastGrowthLift)
	})
	eventually(t, "a GrowthLiftedAtBound event", func() (bool, string) {
		var list eventsv1.EventList
		if err := k8s.List(ctx, &list, clientInNamespace(ns)); err != nil {
			return false, err.Error()
		}
		n := 0
		for _, e := range list.Items {
			if e.Reason == "GrowthLiftedAtBound" && e.Type == "Warning" && e.Regarding.Name == "growing-orders" {
				n++
			}
		}
		return n == 1, fmt.Sprintf("%d such events of %d", n, len(list.Items))
	})
}
