package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/brokerclient"
)

// spreadOver reports whether a cluster's replicas and preferred leaders
// are on brokers 0..n-1 only, within one of each other, with no move
// under way.
func spreadOver(t testing.TB, cl *brokertest.Cluster, n int32) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := cl.Admin().Metadata(ctx)
	if err != nil {
		return false, err.Error()
	}
	replicas, leaders := map[int32]int{}, map[int32]int{}
	all := kadm.TopicsSet{}
	for name, td := range md.Topics {
		all[name] = map[int32]struct{}{}
		for _, p := range td.Partitions {
			all[name][p.Partition] = struct{}{}
			leaders[p.Replicas[0]]++
			for _, id := range p.Replicas {
				if id >= n {
					return false, fmt.Sprintf("%s-%d on %v", name, p.Partition, p.Replicas)
				}
				replicas[id]++
			}
		}
	}
	moves, err := cl.Admin().ListPartitionReassignments(ctx, all)
	if err != nil || len(moves.Sorted()) > 0 {
		return false, fmt.Sprintf("moves under way: %v %v", moves.Sorted(), err)
	}
	for _, count := range []map[int32]int{replicas, leaders} {
		lo, hi := 1<<30, 0
		for id := int32(0); id < n; id++ {
			lo, hi = min(lo, count[id]), max(hi, count[id])
		}
		if hi-lo > 1 {
			return false, fmt.Sprintf("replicas %v, preferred leaders %v", replicas, leaders)
		}
	}
	return true, ""
}

// balanced is spreadOver, and the BrokerCluster says so.
func balanced(t testing.TB, cl *brokertest.Cluster, ns string, n int32) (bool, string) {
	if ok, why := spreadOver(t, cl, n); !ok {
		return false, why
	}
	cond := rebalancingOf(t, ns)
	return cond != nil && cond.Reason == "Balanced", fmt.Sprintf("condition %+v", cond)
}

// startWide starts a cluster of n real brokers of its own, which the
// BrokerCluster "wide" of namespace ns stands for.
func startWide(t testing.TB, ns string, n int) *brokertest.Cluster {
	wide := brokertest.Start(t, brokertest.Options{Brokers: n})
	pool.SetOverride(ns+"/wide", wide.AllAddrs())
	var httpAddrs []string
	for _, b := range wide.Brokers {
		httpAddrs = append(httpAddrs, b.HTTPAddr)
	}
	httpOverride.Store(ns+"/wide", httpAddrs)
	return wide
}

// brokerStatusOf is broker id's entry in the BrokerCluster's status.
func brokerStatusOf(t *testing.T, ns string, id int32) raftkav1.BrokerStatus {
	var c raftkav1.BrokerCluster
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "wide"}, &c); err != nil {
		t.Fatal(err)
	}
	for _, b := range c.Status.Brokers {
		if b.ID == id {
			return b
		}
	}
	return raftkav1.BrokerStatus{}
}

// rebalancingOf is the BrokerCluster's Rebalancing condition, if it is
// of its current generation.
func rebalancingOf(t testing.TB, ns string) *metav1.Condition {
	var c raftkav1.BrokerCluster
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "wide"}, &c); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(c.Status.Conditions, raftkav1.ConditionRebalancing)
	if cond == nil || cond.ObservedGeneration != c.Generation {
		return nil
	}
	return cond
}

// A BrokerCluster of 3 over five running brokers moves every replica off
// brokers 3 and 4, as a scale-in does before the StatefulSet shrinks;
// raised to 5, it spreads replicas and preferred leaders evenly over all
// five; lowered to 4, it drains broker 4 and unregisters it once it
// stopped; lowered below the replication factor, it refuses and moves
// nothing. An acks=all producer runs throughout: every acknowledged
// record is read back once, in order.
func TestRebalancingSpreadsAndDrainsBrokers(t *testing.T) {
	ns := newNamespace(t)
	wide := startWide(t, ns, 5)
	wide.CreateTopic("spread", 6, 3, nil)
	acks := brokertest.NewLedger()
	stop, done := make(chan struct{}), make(chan error, 1)
	producer := wide.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	go func() {
		_, err := acks.ProduceUntil(producer, "spread", 6, stop)
		done <- err
	}()

	c := brokerCluster(ns)
	c.Name, c.Spec.Rebalancing = "wide", raftkav1.RebalancingAuto
	mustCreate(t, c)
	eventually2(t, 2*time.Minute, "replicas drained off brokers 3 and 4", func() (bool, string) { return balanced(t, wide, ns, 3) })

	update := func(replicas int32) {
		t.Helper()
		var c raftkav1.BrokerCluster
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "wide"}, &c); err != nil {
			t.Fatal(err)
		}
		c.Spec.Replicas = replicas
		if err := k8s.Update(context.Background(), &c); err != nil {
			t.Fatal(err)
		}
	}
	update(5)
	eventually2(t, 2*time.Minute, "replicas spread over 5 brokers", func() (bool, string) { return balanced(t, wide, ns, 5) })

	// Broker 3 comes back on an empty volume: the status shows its new
	// incarnation, a Warning Event names it, and its replicas are copied
	// again until none is catching up.
	was := brokerStatusOf(t, ns, 3)
	if was.Generation == 0 || was.Incarnation == "" || was.Replicas == 0 {
		t.Fatalf("broker 3's status before its disk is lost: %+v", was)
	}
	wide.Kill(3)
	wide.LoseDisk(3)
	wide.Restart(3)
	eventually2(t, 2*time.Minute, "broker 3 healed as a new incarnation", func() (bool, string) {
		now := brokerStatusOf(t, ns, 3)
		if now.Generation <= was.Generation || now.Incarnation == was.Incarnation || now.Replicas == 0 || now.CatchingUp != 0 {
			return false, fmt.Sprintf("%+v", now)
		}
		return balanced(t, wide, ns, 5)
	})
	eventually(t, "a BrokerReplaced event", func() (bool, string) {
		var list eventsv1.EventList
		if err := k8s.List(context.Background(), &list, clientInNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.Reason == "BrokerReplaced" && e.Type == "Warning" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(list.Items))
	})

	// Scaling in to 4 drains broker 4; once it stopped (its pod gone), it
	// is unregistered.
	update(4)
	eventually2(t, 2*time.Minute, "broker 4 drained", func() (bool, string) { return balanced(t, wide, ns, 4) })
	wide.Stop(4)
	eventually(t, "broker 4 unregistered", func() (bool, string) {
		got, err := pool.Registered(context.Background(), wide.AllAddrs()[:4])
		return err == nil && len(got) == 4 && !slices.ContainsFunc(got, func(b brokerclient.RegisteredBroker) bool { return b.ID == 4 }), fmt.Sprint(got, err)
	})

	update(2)
	eventually(t, "a scale-in below the replication factor refused", func() (bool, string) {
		cond := rebalancingOf(t, ns)
		return cond != nil && cond.Reason == "NotEnoughBrokers", fmt.Sprintf("%+v", cond)
	})
	time.Sleep(3 * time.Second)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	producer.Close()
	if ok, why := spreadOver(t, wide, 4); !ok {
		t.Errorf("replicas moved for a refused scale-in: %s", why)
	}
	acks.VerifyExactlyOnce(t, "spread", wide.Client)
}
