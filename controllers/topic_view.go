package controllers

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

// topicView is what the brokers report of one topic: its partitions, the
// replica moves under way and its configs set on the topic.
type topicView struct {
	exists  bool
	detail  kadm.TopicDetail
	moves   map[int32]kadm.ListPartitionReassignmentsResponse
	configs map[string]string
}

// readTopic asks the brokers for a topic's view: three requests.
func readTopic(ctx context.Context, adm *kadm.Client, name string) (topicView, error) {
	details, err := adm.ListTopics(ctx, name)
	if err != nil {
		return topicView{}, err
	}
	d, ok := details[name]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return topicView{}, nil
	}
	if d.Err != nil {
		return topicView{}, fmt.Errorf("topic %s: %w", name, d.Err)
	}
	view := topicView{exists: true, detail: d, configs: map[string]string{}}
	rcs, err := adm.DescribeTopicConfigs(ctx, name)
	if err != nil {
		return topicView{}, err
	}
	rc, err := rcs.On(name, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return topicView{}, fmt.Errorf("configs of topic %s: %w", name, err)
	}
	for _, c := range rc.Configs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
			view.configs[c.Key] = *c.Value
		}
	}
	moves, err := adm.ListPartitionReassignments(ctx, partitionsOf(name, d))
	if err != nil {
		return topicView{}, fmt.Errorf("list moves of topic %s: %w", name, err)
	}
	view.moves = moves[name]
	return view, nil
}

// syncTopic makes the topic match the spec and reads it back into the
// status. The view it starts from is read once, and again only when the
// reconcile changed something: a resync of an unchanged topic costs
// three requests.
func (r *TopicReconciler) syncTopic(ctx context.Context, adm *kadm.Client, topic *raftkav1.Topic, brokers int32) (string, error) {
	name := topic.KafkaName()
	view, err := readTopic(ctx, adm, name)
	if err != nil {
		return "", err
	}
	reason, changed, err := r.ensureTopic(ctx, adm, topic, brokers, view)
	if errors.Is(err, kerr.TopicAlreadyExists) {
		// The client retried a create the brokers had carried out (the
		// first attempt outlived its request timeout), or another creator
		// was first: the topic is there now, so sync it as it is.
		if view, err = readTopic(ctx, adm, name); err != nil {
			return "", err
		}
		reason, changed, err = r.ensureTopic(ctx, adm, topic, brokers, view)
	}
	if err != nil {
		return "", err
	}
	if changed {
		if view, err = readTopic(ctx, adm, name); err != nil {
			return "", err
		}
	}
	if !view.exists {
		return "", fmt.Errorf("topic %s: %w", name, kerr.UnknownTopicOrPartition)
	}
	observeTopic(topic, view)
	return reason, nil
}

// observeTopic writes a topic's view into its status.
func observeTopic(topic *raftkav1.Topic, view topicView) {
	topic.Status.Partitions = int32(len(view.detail.Partitions))
	topic.Status.TopicID = uuid.UUID(view.detail.ID).String()
	observeReplicas(topic, view)
	topic.Status.Config = nil
	if len(view.configs) > 0 {
		topic.Status.Config = view.configs
	}
}
