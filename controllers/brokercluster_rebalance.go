package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/rebalance"
)

// maxClusterMoves bounds the partitions a rebalance moves at once: each
// new replica copies its partition from its peers, within the brokers'
// replication throttle.
const maxClusterMoves = 8

// rebalanceState is how far a cluster's rebalance is.
type rebalanceState struct {
	// moving partitions, and the moves planned after them.
	moving, planned int
	// waiting says why nothing moves yet; refused why nothing can.
	waiting, refused string
	// off: spec.rebalancing is Off.
	off bool
}

// rebalance moves partition replicas with Kafka's reassignment API until
// the brokers spec.replicas keeps hold an even share of replicas and
// preferred leaders and the brokers beyond it (to be removed by a
// scale-in) hold none (rebalance.Spread), maxClusterMoves partitions at a
// time. It waits until every kept broker is up, and refuses when they are
// too few for a partition's replicas. Moves under way onto brokers it does
// not keep are cancelled.
func (r *BrokerClusterReconciler) rebalance(ctx context.Context, c *raftkav1.BrokerCluster, view brokersView) (rebalanceState, error) {
	if c.Spec.Rebalancing == raftkav1.RebalancingOff {
		return rebalanceState{off: true}, nil
	}
	if view.mdErr != nil {
		return rebalanceState{waiting: "cannot ask the brokers for the partitions' replicas: " + view.mdErr.Error()}, nil
	}
	adm, md := view.admin, view.md
	mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	keep := make([]int32, c.Spec.Replicas)
	for i := range keep {
		keep[i] = int32(i)
	}
	live := md.Brokers.NodeIDs()
	for _, id := range keep {
		if !slices.Contains(live, id) {
			return rebalanceState{waiting: fmt.Sprintf("broker %d is not up yet", id)}, nil
		}
	}
	all := kadm.TopicsSet{}
	for name, t := range brokerclient.UserTopics(md.Topics) {
		all[name] = map[int32]struct{}{}
		for p := range t.Partitions {
			all[name][p] = struct{}{}
		}
	}
	moves, err := adm.ListPartitionReassignments(mctx, all)
	if err != nil {
		return rebalanceState{waiting: "cannot list the moves under way: " + err.Error()}, nil
	}
	st := rebalanceState{}
	moves.Each(func(kadm.ListPartitionReassignmentsResponse) { st.moving++ })
	r.cancelStrayMoves(ctx, mctx, adm, c, moves)
	busy := func(topic string, index int32) bool { _, ok := moves[topic][index]; return ok }
	layout := layoutOf(md, -1)
	plan, err := rebalance.Spread(layout, keep, busy, len(layout.Partitions))
	if err != nil {
		return rebalanceState{refused: fmt.Sprintf("%d brokers cannot hold every partition: %v", c.Spec.Replicas, err)}, nil
	}
	st.planned = len(plan)
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	// Moves go in waves, planned on a layout with none under way and
	// quiet for a moment: a plan made while moves run, or on a broker's
	// metadata that has not caught up with their end, counts replicas
	// about to leave and overshoots, and the next wave undoes it.
	if !r.waves.quiet(key, st.moving > 0, time.Now()) || len(plan) == 0 {
		return st, nil
	}
	start := plan[:min(len(plan), maxClusterMoves)]
	var req kadm.AlterPartitionAssignmentsReq
	for _, m := range start {
		req.Assign(m.Topic, m.Index, m.Replicas)
	}
	// A replica count the brokers' own metadata does not have (a stale
	// view of a move that just ended) is refused, never applied.
	resp, err := adm.AlterPartitionAssignments(kadm.ForbidAlterRf(mctx), req)
	if err != nil {
		return st, fmt.Errorf("move replicas: %w", err)
	}
	started := 0
	resp.Each(func(pr kadm.AlterPartitionAssignmentsResponse) {
		switch {
		case pr.Err == nil:
			started++
		case errors.Is(pr.Err, kerr.ReassignmentInProgress):
		default:
			log.FromContext(ctx).Info("partition move refused", "topic", pr.Topic, "partition", pr.Partition, "error", pr.Err.Error(), "message", pr.ErrMessage)
		}
	})
	st.moving += started
	st.planned -= started
	r.waves.quiet(key, started > 0, time.Now())
	log.FromContext(ctx).Info("rebalancing", "started", started, "moving", st.moving, "planned", st.planned)
	if r.Recorder != nil && started > 0 {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Rebalancing", "MoveReplicas", "started moving %d partitions; %d moving, %d more planned", started, st.moving, st.planned)
	}
	return st, nil
}

// strayMoves are the moves under way whose target (the replicas minus
// those being removed) holds a broker a cluster of that many brokers does
// not keep: a scale-in edited in while a scale-out's moves run, or a move
// made by hand. The new replica may already have caught up and joined:
// the move is stray all the same.
func strayMoves(moves kadm.ListPartitionReassignmentsResponses, brokers int32) []kadm.ListPartitionReassignmentsResponse {
	var out []kadm.ListPartitionReassignmentsResponse
	for _, m := range moves.Sorted() {
		if slices.ContainsFunc(m.Replicas, func(id int32) bool { return id >= brokers && !slices.Contains(m.RemovingReplicas, id) }) {
			out = append(out, m)
		}
	}
	return out
}

// cancelStrayMoves cancels the strayMoves rather than wait for them: the
// broker they copy to is to be drained, and may never finish the copy (its
// pod gone, its node down). A cancelled partition keeps the replicas it
// had before the move, from which the next wave plans.
func (r *BrokerClusterReconciler) cancelStrayMoves(ctx, mctx context.Context, adm *kadm.Client, c *raftkav1.BrokerCluster, moves kadm.ListPartitionReassignmentsResponses) {
	stray := strayMoves(moves, c.Spec.Replicas)
	if len(stray) == 0 {
		return
	}
	var req kadm.AlterPartitionAssignmentsReq
	for _, m := range stray {
		req.CancelAssign(m.Topic, m.Partition)
	}
	resp, err := adm.AlterPartitionAssignments(mctx, req)
	if err != nil {
		log.FromContext(ctx).Info("cancel moves failed", "error", err.Error())
		return
	}
	cancelled := 0
	resp.Each(func(pr kadm.AlterPartitionAssignmentsResponse) {
		if pr.Err == nil {
			cancelled++
			return
		}
		log.FromContext(ctx).Info("move cancel refused", "topic", pr.Topic, "partition", pr.Partition, "error", pr.Err.Error(), "message", pr.ErrMessage)
	})
	log.FromContext(ctx).Info("moves onto removed brokers cancelled", "cancelled", cancelled, "brokers", c.Spec.Replicas)
	if r.Recorder != nil && cancelled > 0 {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "MovesCancelled", "MoveReplicas", "cancelled %d moves onto brokers a scale-in to %d removes", cancelled, c.Spec.Replicas)
	}
}

// setRebalancing reports a rebalance in the Rebalancing condition.
func setRebalancing(c *raftkav1.BrokerCluster, st rebalanceState) {
	switch {
	case st.off:
		setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionRebalancing, false, "Off", "spec.rebalancing is Off")
	case st.refused != "":
		setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionRebalancing, false, "NotEnoughBrokers", st.refused)
	case st.waiting != "":
		setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionRebalancing, false, "Waiting", st.waiting)
	case st.moving > 0 || st.planned > 0:
		setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionRebalancing, true, "MovingReplicas",
			fmt.Sprintf("%d partitions moving, %d more moves planned", st.moving, st.planned))
	default:
		setCondition(&c.Status.Conditions, c.Generation, raftkav1.ConditionRebalancing, false, "Balanced", "replicas and preferred leaders are spread evenly")
	}
}

// unregisterRemoved forgets the brokers a finished scale-in removed, once
// their pods stopped (UnregisterBroker), so that no new partition is
// placed on them and their metadata nodes leave the group. A broker
// scaled back later joins as a new incarnation.
func (r *BrokerClusterReconciler) unregisterRemoved(ctx context.Context, c *raftkav1.BrokerCluster, stsReplicas int32, view brokersView) {
	if stsReplicas != c.Spec.Replicas || c.Spec.Rebalancing == raftkav1.RebalancingOff || view.regErr != nil {
		return
	}
	access, err := clusterAccess(ctx, r.Client, r.Brokers, r.Secrets, c)
	if err != nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, b := range view.registered {
		if b.ID < c.Spec.Replicas || !b.Fenced {
			continue
		}
		if err := r.Brokers.Unregister(cctx, access, b.ID); err != nil {
			log.FromContext(ctx).Info("unregister removed broker failed", "broker", b.ID, "error", err.Error())
			continue
		}
		log.FromContext(ctx).Info("removed broker unregistered", "broker", b.ID)
		if r.Recorder != nil {
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "BrokerUnregistered", "Unregister", "broker %d left the cluster for good", b.ID)
		}
	}
}

// moveQuiet is how long a cluster goes without moves before the next wave
// is planned: long enough for every broker's metadata to show the last
// wave's end.
const moveQuiet = 5 * time.Second

// moveWaves remembers, per BrokerCluster, when moves were last seen under
// way.
type moveWaves struct {
	mu       sync.Mutex
	lastBusy map[types.NamespacedName]time.Time
}

// quiet notes whether moves run now and reports whether none has for
// moveQuiet.
func (w *moveWaves) quiet(key types.NamespacedName, busy bool, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lastBusy == nil {
		w.lastBusy = map[types.NamespacedName]time.Time{}
	}
	if busy {
		w.lastBusy[key] = now
		return false
	}
	return now.Sub(w.lastBusy[key]) >= moveQuiet
}

// forget drops a deleted cluster's memory.
func (w *moveWaves) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.lastBusy, key)
}
