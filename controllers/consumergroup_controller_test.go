package controllers

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

func TestConsumerGroupReportsLag(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, brokerCluster(ns))
	mustCreate(t, topicObject(ns, "lagging", 2))
	readyIs(t, ns, "lagging", metav1.ConditionTrue, raftkav1.ReasonCreated)
	ctx := context.Background()
	cl := brokers.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := 0; i < 100; i++ {
		recs = append(recs, &kgo.Record{Topic: "lagging", Partition: int32(i % 2), Value: []byte("x")})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "lagging", Partition: 0, At: 40, LeaderEpoch: -1}) // partition 1: no commit
	if _, err := brokers.Admin().CommitOffsets(ctx, "lag-group", offsets); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, &raftkav1.ConsumerGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "lag-group", Namespace: ns},
		Spec:       raftkav1.ConsumerGroupSpec{ClusterRef: raftkav1.ClusterReference{Name: "events"}, GroupID: "lag-group", Topics: []string{"lagging"}},
	})
	eventually(t, "lag in status", func() (bool, string) {
		var cg raftkav1.ConsumerGroup
		_ = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "lag-group"}, &cg)
		// partition 0: 50 - 40; partition 1: all 50, as no offset was committed.
		ok := cg.Status.TotalLag == 60 && len(cg.Status.Topics) == 1 && len(cg.Status.Topics[0].Partitions) == 2 &&
			cg.Status.Topics[0].Partitions[0].Committed == 40 && cg.Status.Topics[0].Partitions[1].Committed == -1 && cg.Status.Partitions == 2
		return ok, ""
	})
	if n := lagSeries(t, ns, "lag-group"); n != 2 {
		t.Fatalf("%d lag gauge series for the group, want 2", n)
	}
	// Deleted, the group leaves no gauges (nor autoscaler state) behind.
	var cg raftkav1.ConsumerGroup
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "lag-group"}, &cg); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, &cg); err != nil {
		t.Fatal(err)
	}
	eventually(t, "lag gauges gone", func() (bool, string) {
		n := lagSeries(t, ns, "lag-group")
		return n == 0, fmt.Sprintf("%d series", n)
	})
}

// lagSeries counts the raftka_consumergroup_lag series of a group.
func lagSeries(t *testing.T, ns, group string) int {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		if f.GetName() != "raftka_consumergroup_lag" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["group"] == group {
				n++
			}
		}
	}
	return n
}
