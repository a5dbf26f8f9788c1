package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

func brokerCluster(ns string) *raftkav1.BrokerCluster {
	return &raftkav1.BrokerCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns},
		// The BrokerClusters of every test namespace stand for the one
		// suite cluster: only the rebalancing tests let theirs move replicas.
		Spec: raftkav1.BrokerClusterSpec{Replicas: 3, Image: "raftka/broker:test", Rebalancing: raftkav1.RebalancingOff,
			Storage: raftkav1.StorageSpec{Size: resource.MustParse("1Gi")}},
	}
}

func topicObject(ns, name string, partitions int32) *raftkav1.Topic {
	return &raftkav1.Topic{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: raftkav1.TopicSpec{ClusterRef: raftkav1.ClusterReference{Name: "events"}, Partitions: partitions,
			ReplicationFactor: 3, MinInSyncReplicas: ptr.To[int32](2), Config: map[string]string{"retention.ms": "3600000"}},
	}
}

func getTopic(t *testing.T, ns, name string) *raftkav1.Topic {
	t.Helper()
	var topic raftkav1.Topic
	getObject(t, ns, name, &topic)
	return &topic
}

// readyIs waits for the Topic's Ready condition to have this status and reason.
func readyIs(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string) *raftkav1.Topic {
	t.Helper()
	var got raftkav1.Topic
	readyConditionIs(t, ns, name, &got, func() []metav1.Condition { return got.Status.Conditions }, status, reason)
	return &got
}

// getObject reads an object of the test's API server into obj.
func getObject(t *testing.T, ns, name string, obj client.Object) {
	t.Helper()
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
}

// readyConditionIs waits for an object's Ready condition, which
// conditions reads from obj, to have this status and reason for its
// current generation.
func readyConditionIs(t *testing.T, ns, name string, obj client.Object, conditions func() []metav1.Condition, status metav1.ConditionStatus, reason string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%T %s Ready=%s/%s", obj, name, status, reason), func() (bool, string) {
		getObject(t, ns, name, obj)
		c := meta.FindStatusCondition(conditions(), raftkav1.ConditionReady)
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Status == status && c.Reason == reason && c.ObservedGeneration == obj.GetGeneration(),
			string(c.Status) + "/" + c.Reason + ": " + c.Message
	})
}

func kafkaConfigs(t *testing.T, topic string) map[string]string {
	t.Helper()
	rcs, err := brokers.Admin().DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range rc.Configs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			out[c.Key] = *c.Value
		}
	}
	return out
}

func kafkaPartitions(t *testing.T, topic string) int {
	t.Helper()
	details, err := brokers.Admin().ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := details[topic]
	if !ok || d.Err != nil {
		return 0
	}
	return len(d.Partitions)
}

func TestTopicIsCreatedGrownAndKeptInLine(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, brokerCluster(ns))
	mustCreate(t, topicObject(ns, "orders", 3))
	got := readyIs(t, ns, "orders", metav1.ConditionTrue, raftkav1.ReasonCreated)
	if got.Status.Partitions != 3 || got.Status.ReplicationFactor != 3 || got.Status.TopicID == "" {
		t.Fatalf("status %+v", got.Status)
	}
	if n := kafkaPartitions(t, "orders"); n != 3 {
		t.Fatalf("kafka topic has %d partitions", n)
	}
	cfg := kafkaConfigs(t, "orders")
	if cfg["retention.ms"] != "3600000" || cfg["min.insync.replicas"] != "2" {
		t.Fatalf("kafka configs %v", cfg)
	}

	// Someone changes the topic with a Kafka tool: the next resync reverts it.
	ctx := context.Background()
	v, other := "60000", "1048576"
	if _, err := brokers.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: &v}, {Op: kadm.SetConfig, Name: "retention.bytes", Value: &other},
	}, "orders"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "drift to be reverted", func() (bool, string) {
		cfg := kafkaConfigs(t, "orders")
		_, extra := cfg["retention.bytes"]
		return cfg["retention.ms"] == "3600000" && !extra, strings.TrimSpace(fmtMap(cfg))
	})

	// Partitions grow with the spec.
	if err := updateTopic(t, ns, "orders", func(t *raftkav1.Topic) { t.Spec.Partitions = 5 }); err != nil {
		t.Fatal(err)
	}
	eventually(t, "partitions to grow", func() (bool, string) {
		got := getTopic(t, ns, "orders")
		return kafkaPartitions(t, "orders") == 5 && got.Status.Partitions == 5 && got.Status.ObservedGeneration == got.Generation, ""
	})
}

func TestTopicDeletionFollowsPolicy(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, brokerCluster(ns))
	kept := topicObject(ns, "kept", 1)
	gone := topicObject(ns, "gone", 1)
	gone.Spec.DeletionPolicy = raftkav1.DeletionPolicyDelete
	mustCreate(t, kept)
	mustCreate(t, gone)
	readyIs(t, ns, "kept", metav1.ConditionTrue, raftkav1.ReasonCreated)
	readyIs(t, ns, "gone", metav1.ConditionTrue, raftkav1.ReasonCreated)
	ctx := context.Background()
	for _, name := range []string{"kept", "gone"} {
		if err := k8s.Delete(ctx, getTopic(t, ns, name)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both Topic objects to go", func() (bool, string) {
		var list raftkav1.TopicList
		_ = k8s.List(ctx, &list, clientInNamespace(ns))
		return len(list.Items) == 0, ""
	})
	if kafkaPartitions(t, "kept") != 1 {
		t.Fatal("deletionPolicy Retain deleted the Kafka topic")
	}
	eventually(t, "the Delete topic to leave the brokers", func() (bool, string) { return kafkaPartitions(t, "gone") == 0, "" })
}

func TestTwoTopicsNamingOneKafkaTopicConflict(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, brokerCluster(ns))
	first := topicObject(ns, "first", 2)
	first.Spec.TopicName = "shared"
	mustCreate(t, first)
	readyIs(t, ns, "first", metav1.ConditionTrue, raftkav1.ReasonCreated)
	time.Sleep(1100 * time.Millisecond) // creation timestamps have second resolution
	second := topicObject(ns, "second", 4)
	second.Spec.TopicName = "shared"
	second.Spec.DeletionPolicy = raftkav1.DeletionPolicyDelete
	mustCreate(t, second)
	got := readyIs(t, ns, "second", metav1.ConditionFalse, raftkav1.ReasonResourceConflict)
	if c := meta.FindStatusCondition(got.Status.Conditions, raftkav1.ConditionReady); !strings.Contains(c.Message, "first") {
		t.Fatalf("conflict message does not name the owner: %s", c.Message)
	}
	if kafkaPartitions(t, "shared") != 2 {
		t.Fatal("the losing Topic changed the Kafka topic")
	}
	// Deleting the loser, even with policy Delete, leaves the topic alone.
	if err := k8s.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if kafkaPartitions(t, "shared") != 2 {
		t.Fatal("deleting the losing Topic deleted the Kafka topic")
	}
}

func TestTopicWithoutClusterIsNotReady(t *testing.T) {
	ns := newNamespace(t)
	orphan := topicObject(ns, "orphan", 1)
	orphan.Spec.ClusterRef.Name = "missing"
	mustCreate(t, orphan)
	got := readyIs(t, ns, "orphan", metav1.ConditionFalse, raftkav1.ReasonClusterNotReady)
	if c := meta.FindStatusCondition(got.Status.Conditions, raftkav1.ConditionReady); !strings.Contains(c.Message, "missing") {
		t.Fatalf("message %q", c.Message)
	}
}

func TestUnsupportedTopicConfigIsReported(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, brokerCluster(ns))
	unclean := topicObject(ns, "unclean", 1)
	unclean.Spec.Config = map[string]string{"unclean.leader.election.enable": "true"}
	mustCreate(t, unclean)
	readyIs(t, ns, "unclean", metav1.ConditionFalse, raftkav1.ReasonNotSupported)
	recompressed := topicObject(ns, "recompressed", 1)
	recompressed.Spec.Config = map[string]string{"compression.type": "zstd"}
	mustCreate(t, recompressed)
	readyIs(t, ns, "recompressed", metav1.ConditionTrue, raftkav1.ReasonCreated)
	compacted := topicObject(ns, "compacted", 1)
	compacted.Spec.Config = map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "3600000"}
	mustCreate(t, compacted)
	readyIs(t, ns, "compacted", metav1.ConditionTrue, raftkav1.ReasonCreated)
}

func fmtMap(m map[string]string) string {
	var b strings.Builder
	for k, v := range m {
		b.WriteString(k + "=" + v + " ")
	}
	return b.String()
}

// updateTopic changes a Topic, retrying while the controller updates it too.
func updateTopic(t *testing.T, ns, name string, change func(*raftkav1.Topic)) error {
	t.Helper()
	var err error
	for try := 0; try < 20; try++ {
		fresh := getTopic(t, ns, name)
		change(fresh)
		if err = k8s.Update(context.Background(), fresh); !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}
