package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/rollout"
	"github.com/raftka/raftka/internal/specs"
)

// syncMetadataVoters makes the next change of the metadata group's voters
// (rollout.NextVoterChange): voters added as the cluster grows, a leaving
// voter removed once drained, which a scale-in waits for; with
// rebalancing Off, a person does. It reports
// whether a change is still to come; one that fails is tried again at
// the next reconcile.
func (r *BrokerClusterReconciler) syncMetadataVoters(ctx context.Context, c *raftkav1.BrokerCluster, view brokersView) bool {
	if c.Spec.Rebalancing == raftkav1.RebalancingOff || view.quorumErr != nil || view.mdErr != nil {
		return false
	}
	change, ok := rollout.NextVoterChange(c.Spec.Replicas, specs.MaxMetadataVoters, view.quorum.Voters, view.quorum.Observers, view.hosted)
	if !ok {
		return false
	}
	access, err := clusterAccess(ctx, r.Client, r.Brokers, r.Secrets, c)
	if err != nil {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	logger := log.FromContext(ctx)
	if change.Add {
		if err := r.Brokers.AddVoter(cctx, access, change.Broker); err != nil {
			logger.Info("adding a metadata voter failed", "broker", change.Broker, "error", err.Error())
			return true
		}
		logger.Info("metadata voter added", "broker", change.Broker)
		if r.Recorder != nil {
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "MetadataVoterAdded", "ChangeVoters", "broker %d now votes in the metadata group", change.Broker)
		}
		return true
	}
	if err := r.Brokers.RemoveVoter(cctx, access, change.Broker); err != nil {
		logger.Info("removing a metadata voter failed", "broker", change.Broker, "error", err.Error())
		return true
	}
	logger.Info("metadata voter removed", "broker", change.Broker)
	if r.Recorder != nil {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "MetadataVoterRemoved", "ChangeVoters", "broker %d left the metadata group before its removal", change.Broker)
	}
	return true
}
