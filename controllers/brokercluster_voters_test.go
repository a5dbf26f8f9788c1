package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/brokerclient"
)

// A cluster founded with a single metadata voter gains a quorum of three
// from its BrokerCluster, and the status marks the voters; scaled in to
// two, the leaving broker is drained, leaves the metadata group, and only
// then does the StatefulSet shrink; once stopped it is unregistered, and
// the two voters left keep the cluster working. An acks=all producer runs
// throughout: every acknowledged record is read back once, in order.
func TestMetadataVotersFollowTheBrokerCluster(t *testing.T) {
	ns := newNamespace(t)
	wide := startWide(t, ns, brokertest.Options{Brokers: 3, FoundingVoters: 1})
	wide.CreateTopic("voters", 4, 2, nil)
	acks := brokertest.NewLedger()
	stop, done := make(chan struct{}), make(chan error, 1)
	producer := wide.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	go func() {
		_, err := acks.ProduceUntil(producer, "voters", 4, stop)
		done <- err
	}()
	ctx := context.Background()
	quorumIs := func(want ...int32) func() (bool, string) {
		return func() (bool, string) {
			q, err := pool.MetadataQuorum(ctx, brokerclient.Access{Addrs: wide.AllAddrs()})
			return err == nil && slices.Equal(q.Voters, want), fmt.Sprint(q, err)
		}
	}
	if ok, got := quorumIs(0)(); !ok {
		t.Fatalf("founded with voters %s, want [0]", got)
	}

	c := brokerCluster(ns)
	c.Name, c.Spec.Rebalancing = "wide", raftkav1.RebalancingAuto
	mustCreate(t, c)
	eventually2(t, time.Minute, "three metadata voters", quorumIs(0, 1, 2))
	eventually(t, "the status marks the voters", func() (bool, string) {
		for id := int32(0); id < 3; id++ {
			if !brokerStatusOf(t, ns, id).MetadataVoter {
				return false, fmt.Sprintf("broker %d: %+v", id, brokerStatusOf(t, ns, id))
			}
		}
		return true, ""
	})
	// Events of one reason merge into a series: one is enough.
	eventually(t, "a MetadataVoterAdded event", func() (bool, string) {
		var list eventsv1.EventList
		if err := k8s.List(ctx, &list, clientInNamespace(ns)); err != nil {
			return false, err.Error()
		}
		added := 0
		for _, e := range list.Items {
			if e.Reason == "MetadataVoterAdded" {
				added++
			}
		}
		return added > 0, fmt.Sprintf("%d events", len(list.Items))
	})

	resizeWide(t, ns, 2)
	eventually2(t, 2*time.Minute, "broker 2 drained and out of the metadata group", quorumIs(0, 1))
	eventually(t, "the StatefulSet shrunk once broker 2 left", func() (bool, string) {
		var sts appsv1.StatefulSet
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "wide"}, &sts); err != nil {
			return false, err.Error()
		}
		return *sts.Spec.Replicas == 2, fmt.Sprint(*sts.Spec.Replicas)
	})
	if ok, why := spreadOver(t, wide, 2); !ok {
		t.Fatalf("broker 2 left the metadata group before it was drained: %s", why)
	}
	wide.Stop(2)
	eventually(t, "broker 2 unregistered", func() (bool, string) {
		got, err := pool.Registered(ctx, brokerclient.Access{Addrs: wide.AllAddrs()[:2]})
		return err == nil && len(got) == 2 && !slices.ContainsFunc(got, func(b brokerclient.RegisteredBroker) bool { return b.ID == 2 }), fmt.Sprint(got, err)
	})
	wide.CreateTopic("after", 2, 2, nil)
	time.Sleep(2 * time.Second)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	producer.Close()
	acks.VerifyExactlyOnce(t, "voters", wide.Client)
}
