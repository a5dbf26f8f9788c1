package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/rebalance"
)

// maxTopicMoves bounds the partitions of one topic whose replicas move
// at once for a replication factor change: each new replica copies its
// partition from its peers, and the brokers' replication throttle is
// shared by all of them.
const maxTopicMoves = 8

// errNotEnoughBrokers: the spec's replication factor exceeds the brokers.
// It heals when brokers are added, so it is not Stalled.
type errNotEnoughBrokers struct{ msg string }

func (e errNotEnoughBrokers) Error() string { return e.msg }

// layoutOf is a cluster's partitions and brokers as Metadata reports
// them, the brokers of id below brokers only (all if negative): those a
// BrokerCluster of that many replicas keeps, the others to be drained by
// a scale-in.
func layoutOf(md kadm.Metadata, brokers int32) rebalance.Layout {
	var l rebalance.Layout
	for _, b := range md.Brokers {
		if brokers >= 0 && b.NodeID >= brokers {
			continue
		}
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		l.Brokers = append(l.Brokers, rebalance.Broker{ID: b.NodeID, Rack: rack})
	}
	for name, t := range brokerclient.UserTopics(md.Topics) {
		for _, p := range t.Partitions {
			l.Partitions = append(l.Partitions, rebalance.Partition{Topic: name, Index: p.Partition, Replicas: slices.Clone(p.Replicas)})
		}
	}
	return l
}

// partitionsOf is the set of a topic's partitions, to ask about.
func partitionsOf(name string, d kadm.TopicDetail) kadm.TopicsSet {
	set := kadm.TopicsSet{name: {}}
	for p := range d.Partitions {
		set[name][p] = struct{}{}
	}
	return set
}

// ensureReplication moves replicas until every partition of the topic
// has spec.replicationFactor of them, at most maxTopicMoves partitions at
// a time: a move adds the new replicas as non-voting members that catch
// up before they count, or removes replicas once the others vote. New
// replicas go only to the cluster's first brokers (a scale-in drains the
// others). It returns how many partitions are moving, and of them how
// many it started.
func (r *TopicReconciler) ensureReplication(ctx context.Context, adm *kadm.Client, topic *raftkav1.Topic, view topicView, brokers int32) (moving, started int, err error) {
	name, rf := topic.KafkaName(), int(topic.Spec.ReplicationFactor)
	moving = len(view.moves)
	var behind []int32
	for _, p := range view.detail.Partitions.Sorted() {
		if _, ok := view.moves[p.Partition]; !ok && len(p.Replicas) != rf {
			behind = append(behind, p.Partition)
		}
	}
	if len(behind) == 0 || moving >= maxTopicMoves {
		return moving, 0, nil
	}
	md, err := adm.Metadata(ctx)
	if err != nil {
		return moving, 0, err
	}
	targets, err := rebalance.ReplicationFactor(layoutOf(md, brokers), name, rf)
	if err != nil {
		return moving, 0, errNotEnoughBrokers{fmt.Sprintf("topic %s: %v", name, err)}
	}
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range behind {
		if target, ok := targets[p]; ok && moving+started < maxTopicMoves {
			req.Assign(name, p, target)
			started++
		}
	}
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return moving, 0, fmt.Errorf("move replicas of topic %s: %w", name, err)
	}
	for p, pr := range resp[name] {
		switch {
		case pr.Err == nil, errors.Is(pr.Err, kerr.ReassignmentInProgress):
		case errors.Is(pr.Err, kerr.InvalidReplicationFactor), errors.Is(pr.Err, kerr.InvalidReplicaAssignment):
			return moving, 0, errNotSupported{fmt.Sprintf("the brokers refused replication factor %d for %s-%d: %v %s", rf, name, p, pr.Err, pr.ErrMessage)}
		default:
			return moving, 0, fmt.Errorf("move replicas of %s-%d: %w", name, p, pr.Err)
		}
	}
	log.FromContext(ctx).Info("topic replicas moving", "topic", name, "replicationFactor", rf, "partitions", started, "left", len(behind)-started)
	return moving + started, started, nil
}

// observeReplicas writes each partition's replicas and the moves under
// way into the status.
func observeReplicas(topic *raftkav1.Topic, view topicView) {
	topic.Status.Replicas = nil
	rf := 0
	for i, p := range view.detail.Partitions.Sorted() {
		pr := raftkav1.PartitionReplicas{Partition: p.Partition, Replicas: slices.Clone(p.Replicas)}
		if m, ok := view.moves[p.Partition]; ok {
			pr.Adding, pr.Removing = slices.Clone(m.AddingReplicas), slices.Clone(m.RemovingReplicas)
		}
		settled := len(p.Replicas) - len(pr.Adding)
		if i == 0 || settled < rf {
			rf = settled
		}
		topic.Status.Replicas = append(topic.Status.Replicas, pr)
	}
	topic.Status.ReplicationFactor = int32(rf)
}

// reassignPoll is how often a Topic whose replicas move is looked at.
const reassignPoll = 3 * time.Second

// movingMessage says how far a replication factor change is.
func movingMessage(topic *raftkav1.Topic) string {
	at, moving := 0, 0
	for _, p := range topic.Status.Replicas {
		switch {
		case len(p.Adding) > 0 || len(p.Removing) > 0:
			moving++
		case len(p.Replicas) == int(topic.Spec.ReplicationFactor):
			at++
		}
	}
	return fmt.Sprintf("topic %s: %d of %d partitions have replication factor %d; %d moving", topic.KafkaName(), at, len(topic.Status.Replicas),
		topic.Spec.ReplicationFactor, moving)
}
