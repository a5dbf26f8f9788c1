package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/broker/growth"
	"github.com/raftka/raftka/internal/brokerclient"
)

// growthPoll is how often a Topic whose growth holds its consumers is
// looked at again, so its status follows the hold.
const growthPoll = 5 * time.Second

// observeGrowth reads the topic's ordered growth from a broker's HTTP
// endpoint into its status, and reports a growth lifted at its bound as a
// Warning Event, once: the status remembers the lift it last saw. A
// broker that cannot be asked leaves the status as it was.
func (r *TopicReconciler) observeGrowth(ctx context.Context, topic *raftkav1.Topic, cluster *raftkav1.BrokerCluster) {
	st, found, err := r.growthOf(ctx, cluster, topic.KafkaName())
	if err != nil {
		log.FromContext(ctx).Info("ordered growth not read", "topic", topic.KafkaName(), "error", err.Error())
		return
	}
	seen := topic.Status.LastGrowthLift
	topic.Status.Growth, topic.Status.LastGrowthLift = nil, nil
	if !found {
		return
	}
	topic.Status.Growth, topic.Status.LastGrowthLift = topicGrowth(st), growthLift(st.LastLift)
	lift := topic.Status.LastGrowthLift
	if r.Recorder != nil && lift != nil && lift.Reason == raftkav1.GrowthBound && (seen == nil || seen.Growth != lift.Growth) {
		r.Recorder.Eventf(topic, nil, corev1.EventTypeWarning, "GrowthLiftedAtBound", "LiftGrowth",
			"growth %d of topic %s was lifted after %ds (raftka.growth.max.hold.ms) before every group that consumes it had read the old partitions: a key may be read out of order", lift.Growth, topic.KafkaName(), lift.HeldSeconds)
	}
}

// growthOf is the topic's ordered growth, false if it never had one.
func (r *TopicReconciler) growthOf(ctx context.Context, cluster *raftkav1.BrokerCluster, topic string) (growth.Status, bool, error) {
	all, err := askGrowths(ctx, r.HTTPAddr, cluster, topic)
	if err != nil || len(all) == 0 {
		return growth.Status{}, false, err
	}
	return all[0], true, nil
}

// askGrowths asks the cluster's brokers in turn for the ordered growths
// of topic ("" for all), until one answers: every broker reports the same
// metadata.
func askGrowths(ctx context.Context, httpAddr func(*raftkav1.BrokerCluster, int32) string, cluster *raftkav1.BrokerCluster, topic string) ([]growth.Status, error) {
	if httpAddr == nil {
		httpAddr = DNSHTTPAddr
	}
	err := fmt.Errorf("cluster %s has no broker", cluster.Name)
	for id := range cluster.Spec.Replicas {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		all, gerr := brokerclient.Growths(cctx, httpAddr(cluster, id), topic)
		cancel()
		if gerr == nil {
			return all, nil
		}
		err = gerr
	}
	return nil, err
}

// topicGrowth is the status of the earliest growth in progress, nil for
// none.
func topicGrowth(st growth.Status) *raftkav1.TopicGrowth {
	if len(st.Growths) == 0 {
		return nil
	}
	g := st.Growths[0]
	out := &raftkav1.TopicGrowth{From: g.From, To: g.To, Phase: raftkav1.GrowthHolding, Splits: g.Splits,
		DrainingGroups: g.Draining, Queued: int32(len(st.Growths) - 1)}
	if g.Hidden {
		out.Phase = raftkav1.GrowthSplitting
		return out
	}
	out.HeldSince, out.Releases = &metav1.Time{Time: g.HeldSince}, g.Releases
	return out
}

func growthLift(l *growth.Lift) *raftkav1.GrowthLift {
	if l == nil {
		return nil
	}
	reason := raftkav1.GrowthDrained
	if l.Reason == growth.Bound {
		reason = raftkav1.GrowthBound
	}
	return &raftkav1.GrowthLift{Growth: int32(l.Seq), Reason: reason, Time: metav1.Time{Time: l.At}, HeldSeconds: l.HeldMs / 1000}
}
