package controllers

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/throttle"
)

// clusterThrottle is the follower throttle set for every broker, as the
// brokers report it, and whether one is.
func clusterThrottle(t *testing.T, cl *brokertest.Cluster) (int64, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rcs, err := cl.Admin().DescribeBrokerConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key == followerThrottleKey && c.Source == kmsg.ConfigSourceDynamicDefaultBrokerConfig && c.Value != nil {
				v, _ := strconv.ParseInt(*c.Value, 10, 64)
				return v, true
			}
		}
	}
	return 0, false
}

// editCluster changes a BrokerCluster's spec, retrying over the
// controller's status writes.
func editCluster(t *testing.T, ns, name string, edit func(*raftkav1.BrokerCluster)) {
	t.Helper()
	for try := 0; ; try++ {
		var c raftkav1.BrokerCluster
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &c); err != nil {
			t.Fatal(err)
		}
		edit(&c)
		err := k8s.Update(context.Background(), &c)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || try == 20 {
			t.Fatal(err)
		}
	}
}

// throttleStatus is the BrokerCluster's status.replicationThrottle.
func throttleStatus(t *testing.T, ns, name string) *raftkav1.ReplicationThrottleStatus {
	var c raftkav1.BrokerCluster
	getObject(t, ns, name, &c)
	return c.Status.ReplicationThrottle
}

// The operator sets the replication throttle of a cluster that rebalances
// for every broker and shows it in the status; a rate in spec.config
// takes it over (the operator's value is removed, so the brokers' flag
// applies), and a value set with Kafka's tools is left as it is, even 0
// (no bound), which the operator once took for its own.
func TestReplicationThrottleYieldsToTheUsersRate(t *testing.T) {
	ns := newNamespace(t)
	cl := startBrokers(t, ns, "throttled", brokertest.Options{Brokers: 3})
	c := brokerCluster(ns)
	c.Name, c.Spec.Rebalancing = "throttled", raftkav1.RebalancingAuto
	mustCreate(t, c)
	operatorsRate := func() (bool, string) {
		st := throttleStatus(t, ns, "throttled")
		v, set := clusterThrottle(t, cl)
		return st != nil && st.BytesPerSecond == throttle.DefaultPolicy.Start && set && v == st.BytesPerSecond,
			fmt.Sprintf("status %+v, brokers' %d (set %v)", st, v, set)
	}
	eventually(t, "the operator's starting rate on the brokers and in the status", operatorsRate)

	editCluster(t, ns, "throttled", func(c *raftkav1.BrokerCluster) {
		c.Spec.Config = map[string]string{followerThrottleSpecKey: "1048576"}
	})
	eventually(t, "the operator's rate removed for spec.config's", func() (bool, string) {
		st := throttleStatus(t, ns, "throttled")
		v, set := clusterThrottle(t, cl)
		return st == nil && !set, fmt.Sprintf("status %+v, brokers' %d (set %v)", st, v, set)
	})

	editCluster(t, ns, "throttled", func(c *raftkav1.BrokerCluster) { c.Spec.Config = nil })
	eventually(t, "the operator's rate back", operatorsRate)

	byHand := "0" // no bound: the value a forgotten cluster's last rate equals
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Admin().AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: followerThrottleKey, Value: &byHand}})
	if err == nil {
		err = resp[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the operator hands the rate set by hand over", func() (bool, string) {
		st := throttleStatus(t, ns, "throttled")
		return st == nil, fmt.Sprintf("status %+v", st)
	})
	// Its own status write brings another look.
	time.Sleep(5 * time.Second)
	if v, set := clusterThrottle(t, cl); !set || strconv.FormatInt(v, 10) != byHand {
		t.Fatalf("the rate set by hand is %d (set %v) after the operator looked again, want %s", v, set, byHand)
	}
	if st := throttleStatus(t, ns, "throttled"); st != nil {
		t.Fatalf("status %+v, want none while the rate set by hand is in force", st)
	}
}
