package controllers

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	corev1 "k8s.io/api/core/v1"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/specs"
)

// brokersView is what the brokers say of their cluster, asked once per
// reconcile: the partitions with their replicas and the live brokers
// (Metadata), every registered broker, fenced or not, and the metadata
// group's voters and observers (DescribeQuorum); each with the error that
// kept it from being read.
type brokersView struct {
	admin *kadm.Client
	md    kadm.Metadata
	mdErr error
	// hosted counts each broker's partition replicas in md.
	hosted     map[int32]int
	registered []brokerclient.RegisteredBroker
	regErr     error
	quorum     brokerclient.Quorum
	quorumErr  error
}

// viewBrokers asks the brokers of c, within 10 seconds in all.
func (r *BrokerClusterReconciler) viewBrokers(ctx context.Context, c *raftkav1.BrokerCluster) brokersView {
	var v brokersView
	access, err := clusterAccess(ctx, r.Client, r.Brokers, r.Secrets, c)
	if err != nil {
		v.mdErr, v.regErr, v.quorumErr = err, err, err
		return v
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v.admin, v.mdErr = r.Brokers.Admin(access)
	if v.mdErr != nil {
		v.regErr, v.quorumErr = v.mdErr, v.mdErr
		return v
	}
	v.md, v.mdErr = v.admin.Metadata(vctx)
	v.hosted = hostedReplicas(v.md)
	v.registered, v.regErr = r.Brokers.Registered(vctx, access)
	v.quorum, v.quorumErr = r.Brokers.MetadataQuorum(vctx, access)
	return v
}

// hostedReplicas counts partition replicas per broker id.
func hostedReplicas(md kadm.Metadata) map[int32]int {
	hosted := map[int32]int{}
	for _, t := range brokerclient.UserTopics(md.Topics) {
		for _, p := range t.Partitions {
			for _, id := range p.Replicas {
				hosted[id]++
			}
		}
	}
	return hosted
}

// observeBrokers lists every broker pod and every registered broker, with
// what the cluster knows of each: its incarnation and generation (asked of
// the broker, kept from the last status while it does not answer), the
// partition replicas it holds and how many of them are catching up. A
// broker whose incarnation changed since the last status came back on an
// empty volume: a Warning Event says so, while its leaders replace its
// replicas.
func (r *BrokerClusterReconciler) observeBrokers(ctx context.Context, c *raftkav1.BrokerCluster, pods []corev1.Pod, view brokersView) []raftkav1.BrokerStatus {
	previous := map[int32]raftkav1.BrokerStatus{}
	for _, b := range c.Status.Brokers {
		previous[b.ID] = b
	}
	byID := map[int32]*raftkav1.BrokerStatus{}
	entry := func(id int32) *raftkav1.BrokerStatus {
		if byID[id] == nil {
			byID[id] = &raftkav1.BrokerStatus{ID: id, Address: specs.BrokerAddress(c, id),
				Incarnation: previous[id].Incarnation, Generation: previous[id].Generation}
		}
		return byID[id]
	}
	for i := range pods {
		entry(ordinalOf(pods[i].Name)).Ready = podReady(&pods[i])
	}
	if view.regErr == nil {
		for _, b := range view.registered {
			st := entry(b.ID)
			if b.Fenced {
				continue
			}
			ictx, icancel := context.WithTimeout(ctx, 2*time.Second)
			if id, err := brokerclient.BrokerIdentity(ictx, r.HTTPAddr(c, b.ID), b.ID); err == nil {
				st.Incarnation, st.Generation = id.Incarnation, id.Generation
			}
			icancel()
		}
	}
	if view.mdErr == nil {
		for _, t := range brokerclient.UserTopics(view.md.Topics) {
			for _, p := range t.Partitions {
				for _, id := range p.Replicas {
					st := entry(id)
					st.Replicas++
					if !slices.Contains(p.ISR, id) {
						st.CatchingUp++
					}
				}
			}
		}
	}
	if view.quorumErr == nil {
		for _, id := range view.quorum.Voters {
			entry(id).MetadataVoter = true
		}
	}
	out := make([]raftkav1.BrokerStatus, 0, len(byID))
	for id, st := range byID {
		if prev := previous[id]; r.Recorder != nil && prev.Incarnation != "" && st.Incarnation != prev.Incarnation {
			r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, "BrokerReplaced", "ReplaceReplicas",
				"broker %d came back on an empty volume as a new incarnation (generation %d, was %d): its partition replicas are replaced and copied again",
				id, st.Generation, prev.Generation)
		}
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
