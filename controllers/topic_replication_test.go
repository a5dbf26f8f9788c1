package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

// kafkaReplicas returns each partition's replicas and in-sync replicas
// as the brokers report them.
func kafkaReplicas(t *testing.T, topic string) (replicas, isr map[int32][]int32) {
	t.Helper()
	details, err := brokers.Admin().ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	replicas, isr = map[int32][]int32{}, map[int32][]int32{}
	for _, p := range details[topic].Partitions {
		replicas[p.Partition], isr[p.Partition] = p.Replicas, p.ISR
	}
	return replicas, isr
}

// replicatedAt reports whether every partition has rf distinct replicas,
// all in sync, and the Topic says so.
func replicatedAt(t *testing.T, ns, name string, rf int) (bool, string) {
	replicas, isr := kafkaReplicas(t, name)
	got := getTopic(t, ns, name)
	for p, r := range replicas {
		distinct := slices.Clone(r)
		slices.Sort(distinct)
		if len(slices.Compact(distinct)) != rf || len(isr[p]) != rf {
			return false, fmt.Sprintf("partition %d: replicas %v, in sync %v", p, r, isr[p])
		}
	}
	if int(got.Status.ReplicationFactor) != rf || len(got.Status.Replicas) != len(replicas) {
		return false, fmt.Sprintf("status: replication factor %d, %d partitions listed", got.Status.ReplicationFactor, len(got.Status.Replicas))
	}
	for _, pr := range got.Status.Replicas {
		if len(pr.Adding) > 0 || len(pr.Removing) > 0 || !slices.Equal(pr.Replicas, replicas[pr.Partition]) {
			return false, fmt.Sprintf("status of partition %d: %+v", pr.Partition, pr)
		}
	}
	return true, ""
}

// A Topic's replication factor follows its spec: 1 to 3 adds replicas on
// every broker, 3 to 2 drops one of each partition but its preferred
// leader, and a factor above the brokers is refused with a condition
// while nothing moves. The records written before stay readable.
func TestReplicationFactorFollowsTheSpec(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, brokerCluster(ns))
	topic := topicObject(ns, "replicated", 4)
	topic.Spec.ReplicationFactor, topic.Spec.MinInSyncReplicas = 1, nil
	mustCreate(t, topic)
	readyIs(t, ns, "replicated", metav1.ConditionTrue, raftkav1.ReasonCreated)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	producer := brokers.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("replicated"))
	defer producer.Close()
	var recs []*kgo.Record
	for i := 0; i < 400; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprint(i))})
	}
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	if err := updateTopic(t, ns, "replicated", func(t *raftkav1.Topic) { t.Spec.ReplicationFactor = 3 }); err != nil {
		t.Fatal(err)
	}
	eventually2(t, 90*time.Second, "replication factor 3", func() (bool, string) { return replicatedAt(t, ns, "replicated", 3) })
	readyIs(t, ns, "replicated", metav1.ConditionTrue, raftkav1.ReasonUpdated)
	before, _ := kafkaReplicas(t, "replicated")

	if err := updateTopic(t, ns, "replicated", func(t *raftkav1.Topic) { t.Spec.ReplicationFactor = 2 }); err != nil {
		t.Fatal(err)
	}
	eventually2(t, 90*time.Second, "replication factor 2", func() (bool, string) { return replicatedAt(t, ns, "replicated", 2) })
	after, _ := kafkaReplicas(t, "replicated")
	for p, r := range after {
		if r[0] != before[p][0] {
			t.Errorf("partition %d: preferred leader %d became %d", p, before[p][0], r[0])
		}
	}

	if err := updateTopic(t, ns, "replicated", func(t *raftkav1.Topic) { t.Spec.ReplicationFactor = 4 }); err != nil {
		t.Fatal(err)
	}
	readyIs(t, ns, "replicated", metav1.ConditionFalse, raftkav1.ReasonNotEnoughBrokers)
	time.Sleep(3 * time.Second)
	if ok, why := replicatedAt(t, ns, "replicated", 2); !ok {
		t.Fatalf("replicas moved for a replication factor above the brokers: %s", why)
	}

	consumer := brokers.Client(kgo.ConsumeTopics("replicated"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer consumer.Close()
	seen := map[string]bool{}
	for len(seen) < len(recs) && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if len(seen) != len(recs) {
		t.Fatalf("read back %d of %d records", len(seen), len(recs))
	}
}
