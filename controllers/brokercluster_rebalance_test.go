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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	for name, td := range brokerclient.UserTopics(md.Topics) {
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

// startWide starts a cluster of real brokers of its own, which the
// BrokerCluster "wide" of namespace ns stands for; the BrokerCluster is
// deleted when the test ends.
func startWide(t testing.TB, ns string, opts brokertest.Options) *brokertest.Cluster {
	return startBrokers(t, ns, "wide", opts)
}

// startBrokers starts a cluster of real brokers of its own, which the
// BrokerCluster name of namespace ns stands for; the BrokerCluster is
// deleted when the test ends.
func startBrokers(t testing.TB, ns, name string, opts brokertest.Options) *brokertest.Cluster {
	cl := brokertest.Start(t, opts)
	// Before its brokers stop (cleanups run last first): the operator
	// would otherwise go on asking brokers that are gone.
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &raftkav1.BrokerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	})
	pool.SetOverride(ns+"/"+name, cl.AllAddrs())
	var httpAddrs []string
	for _, b := range cl.Brokers {
		httpAddrs = append(httpAddrs, b.HTTPAddr)
	}
	httpOverride.Store(ns+"/"+name, httpAddrs)
	return cl
}

// resizeWide sets the replicas of the BrokerCluster "wide" of namespace
// ns, retrying when the controller's status write got in between.
func resizeWide(t testing.TB, ns string, replicas int32) {
	t.Helper()
	var err error
	for try := 0; try < 20; try++ {
		var c raftkav1.BrokerCluster
		if err = k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "wide"}, &c); err != nil {
			t.Fatal(err)
		}
		c.Spec.Replicas = replicas
		if err = k8s.Update(context.Background(), &c); !apierrors.IsConflict(err) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
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
	wide := startWide(t, ns, brokertest.Options{Brokers: 5})
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

	resizeWide(t, ns, 5)
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
	resizeWide(t, ns, 4)
	eventually2(t, 2*time.Minute, "broker 4 drained", func() (bool, string) { return balanced(t, wide, ns, 4) })
	wide.Stop(4)
	eventually(t, "broker 4 unregistered", func() (bool, string) {
		got, err := pool.Registered(context.Background(), brokerclient.Access{Addrs: wide.AllAddrs()[:4]})
		return err == nil && len(got) == 4 && !slices.ContainsFunc(got, func(b brokerclient.RegisteredBroker) bool { return b.ID == 4 }), fmt.Sprint(got, err)
	})

	resizeWide(t, ns, 2)
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

func TestStrayMovesAddOnRemovedBrokers(t *testing.T) {
	moves := kadm.ListPartitionReassignmentsResponses{"t": {
		0: {Topic: "t", Partition: 0, Replicas: []int32{0, 1, 2, 4}, AddingReplicas: []int32{4}, RemovingReplicas: []int32{2}},
		1: {Topic: "t", Partition: 1, Replicas: []int32{0, 1, 4, 3}, AddingReplicas: []int32{3}, RemovingReplicas: []int32{4}},
		2: {Topic: "t", Partition: 2, Replicas: []int32{1, 2, 3}, AddingReplicas: []int32{3}},
		// Broker 4's replica caught up and joined; 2 is yet to leave.
		3: {Topic: "t", Partition: 3, Replicas: []int32{0, 1, 2, 4}, RemovingReplicas: []int32{2}},
	}}
	for _, tc := range []struct {
		brokers int32
		want    []int32
	}{{5, nil}, {4, []int32{0, 3}}, {3, []int32{0, 1, 2, 3}}} {
		var got []int32
		for _, m := range strayMoves(moves, tc.brokers) {
			got = append(got, m.Partition)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%d brokers: stray moves of partitions %v, want %v", tc.brokers, got, tc.want)
		}
	}
}

// rackSpans reports whether every partition of the cluster spans as many
// racks as it has replicas (rf of them), with no move under way.
func rackSpans(t testing.TB, cl *brokertest.Cluster, racks []string, rf int) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := cl.Admin().Metadata(ctx)
	if err != nil {
		return false, err.Error()
	}
	all := kadm.TopicsSet{}
	for name, td := range brokerclient.UserTopics(md.Topics) {
		all[name] = map[int32]struct{}{}
		for _, p := range td.Partitions {
			all[name][p.Partition] = struct{}{}
			spans := map[string]bool{}
			for _, id := range p.Replicas {
				spans[racks[id]] = true
			}
			if len(p.Replicas) != rf || len(spans) != rf {
				return false, fmt.Sprintf("%s-%d on %v", name, p.Partition, p.Replicas)
			}
		}
	}
	moves, err := cl.Admin().ListPartitionReassignments(ctx, all)
	if err != nil || len(moves.Sorted()) > 0 {
		return false, fmt.Sprintf("moves under way: %v %v", moves.Sorted(), err)
	}
	return true, ""
}

// Brokers in zones a, a, b, b and c, as their nodes' zone labels make
// them: a topic placed on zones a, a and b is moved onto three zones by
// the rebalancer, and a Topic raised from replication factor 1 to 3 gets
// its new replicas on the zones its partitions lack.
func TestRebalancingPlacesReplicasOnDistinctRacks(t *testing.T) {
	ns := newNamespace(t)
	racks := []string{"a", "a", "b", "b", "c"}
	wide := startWide(t, ns, brokertest.Options{Brokers: 5, Racks: racks})
	wide.CreateTopicOn("zoned", [][]int32{{0, 1, 2}, {1, 0, 3}, {2, 0, 1}, {3, 1, 0}, {0, 2, 3}, {1, 3, 2}})
	c := brokerCluster(ns)
	c.Name, c.Spec.Replicas, c.Spec.Rebalancing = "wide", 5, raftkav1.RebalancingAuto
	mustCreate(t, c)
	topic := topicObject(ns, "grown", 4)
	topic.Spec.ClusterRef.Name, topic.Spec.ReplicationFactor, topic.Spec.MinInSyncReplicas = "wide", 1, nil
	mustCreate(t, topic)
	// The rebalancer may move its single replicas first: Created, then
	// Updated.
	eventually(t, "topic grown ready", func() (bool, string) {
		got := getTopic(t, ns, "grown")
		return meta.IsStatusConditionTrue(got.Status.Conditions, raftkav1.ConditionReady), fmt.Sprintf("%+v", got.Status.Conditions)
	})
	if err := updateTopic(t, ns, "grown", func(t *raftkav1.Topic) { t.Spec.ReplicationFactor = 3 }); err != nil {
		t.Fatal(err)
	}
	eventually2(t, 2*time.Minute, "every partition on three zones", func() (bool, string) {
		if ok, why := rackSpans(t, wide, racks, 3); !ok {
			return false, why
		}
		cond := rebalancingOf(t, ns)
		return cond != nil && cond.Reason == "Balanced", fmt.Sprintf("condition %+v", cond)
	})
}

// A scale-out's moves are under way when broker 4, which they copy to,
// stops answering (its node down) and spec.replicas is lowered to 4: the
// rebalancer cancels the moves onto broker 4, which could not finish,
// rather than wait for them, and spreads over four brokers from where the
// other moves are. An acks=all producer runs throughout: every
// acknowledged record is read back once, in order.
func TestRebalancingTakesOverAnEditMidway(t *testing.T) {
	ns := newNamespace(t)
	wide := startWide(t, ns, brokertest.Options{Brokers: 5})
	wide.CreateTopicOn("midway", [][]int32{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {1, 0, 2}, {2, 1, 0}})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	acks := brokertest.NewLedger()
	producer := wide.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	value := make([]byte, 1000)
	for i := 0; i < 6000; i++ {
		producer.Produce(ctx, &kgo.Record{Topic: "midway", Partition: int32(i % 6), Value: append([]byte(fmt.Sprintf("fill-%d-", i)), value...)}, acks.Record)
	}
	if err := producer.Flush(ctx); err != nil || acks.Acked() != 6000 {
		t.Fatalf("fill: %v, %d acknowledged", err, acks.Acked())
	}
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := acks.ProduceUntil(producer, "midway", 6, stop)
		done <- err
	}()
	c := brokerCluster(ns)
	c.Name, c.Spec.Replicas, c.Spec.Rebalancing = "wide", 5, raftkav1.RebalancingAuto
	mustCreate(t, c)
	eventually(t, "a move onto broker 4 under way", func() (bool, string) {
		moves, err := wide.Admin().ListPartitionReassignments(ctx, kadm.TopicsSet{"midway": {0: {}, 1: {}, 2: {}, 3: {}, 4: {}, 5: {}}})
		for _, m := range moves.Sorted() {
			if slices.Contains(m.AddingReplicas, 4) {
				return true, ""
			}
		}
		return false, fmt.Sprint(moves.Sorted(), err)
	})
	wide.Pause(4)
	defer wide.Resume(4)
	resizeWide(t, ns, 4)
	// Slow where requests reach the stopped broker and time out, but
	// without the cancellation it never settles.
	eventually2(t, 3*time.Minute, "replicas spread over 4 brokers", func() (bool, string) { return balanced(t, wide, ns, 4) })
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	producer.Close()
	acks.VerifyExactlyOnce(t, "midway", wide.Client)
}
