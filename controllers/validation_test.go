package controllers

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

// The API server itself refuses invalid objects, with these messages.
func TestAdmissionRejectsInvalidObjects(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	create := []struct {
		name string
		obj  func() *raftkav1.Topic
		want string
	}{
		{"zero partitions", func() *raftkav1.Topic { t := topicObject(ns, "a", 0); return t }, "spec.partitions"},
		{"zero replication", func() *raftkav1.Topic { t := topicObject(ns, "b", 1); t.Spec.ReplicationFactor = 0; return t }, "spec.replicationFactor"},
		{"min isr above rf", func() *raftkav1.Topic {
			t := topicObject(ns, "c", 1)
			t.Spec.MinInSyncReplicas = ptr.To[int32](4)
			return t
		}, "minInSyncReplicas must not exceed replicationFactor"},
		{"bad topic name", func() *raftkav1.Topic { t := topicObject(ns, "d", 1); t.Spec.TopicName = "no/slashes"; return t }, "spec.topicName"},
		{"bad deletion policy", func() *raftkav1.Topic { t := topicObject(ns, "e", 1); t.Spec.DeletionPolicy = "Shred"; return t }, "spec.deletionPolicy"},
	}
	for _, c := range create {
		err := k8s.Create(ctx, c.obj())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming %q", c.name, err, c.want)
		}
	}

	topic := topicObject(ns, "valid", 3)
	topic.Spec.TopicName = "valid-topic"
	topic.Spec.ClusterRef.Name = "no-cluster" // keep the controller off the brokers
	mustCreate(t, topic)
	update := []struct {
		name   string
		change func(*raftkav1.Topic)
		want   string
	}{
		{"shrink", func(t *raftkav1.Topic) { t.Spec.Partitions = 2 }, "partitions cannot decrease"},
		{"rename", func(t *raftkav1.Topic) { t.Spec.TopicName = "other" }, "topicName is immutable"},
		{"unname", func(t *raftkav1.Topic) { t.Spec.TopicName = "" }, "topicName is immutable"},
		{"move", func(t *raftkav1.Topic) { t.Spec.ClusterRef.Name = "elsewhere" }, "clusterRef is immutable"},
		{"replication below min.insync.replicas", func(t *raftkav1.Topic) { t.Spec.ReplicationFactor = 1 }, "minInSyncReplicas must not exceed replicationFactor"},
	}
	for _, c := range update {
		err := updateTopic(t, ns, "valid", c.change)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}

	cg := &raftkav1.ConsumerGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: ns},
		Spec: raftkav1.ConsumerGroupSpec{ClusterRef: raftkav1.ClusterReference{Name: "events"}, GroupID: "workers", Topics: []string{"orders"},
			MinReplicas: ptr.To[int32](5), MaxReplicas: ptr.To[int32](2)},
	}
	if err := k8s.Create(ctx, cg); err == nil || !strings.Contains(err.Error(), "minReplicas must not exceed maxReplicas") {
		t.Errorf("consumer group min > max: %v", err)
	}
	bc := brokerCluster(ns)
	bc.Spec.Replicas = 0
	if err := k8s.Create(ctx, bc); err == nil || !strings.Contains(err.Error(), "spec.replicas") {
		t.Errorf("zero brokers: %v", err)
	}
	bc = brokerCluster(ns)
	bc.Spec.Listeners = []raftkav1.ListenerSpec{{Name: "mtls", Port: 9094, Authentication: &raftkav1.ListenerAuthentication{Type: raftkav1.AuthenticationTLS}}}
	if err := k8s.Create(ctx, bc); err == nil || !strings.Contains(err.Error(), "tls authentication needs the listener's tls") {
		t.Errorf("certificates asked for on a listener without TLS: %v", err)
	}
}
