package controllers

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
}
