package controllers

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/throttle"
)

// followerThrottleKey is the broker config of the throttle the operator
// tunes, and followerThrottleSpecKey its spec.config name, which wins.
const (
	followerThrottleKey     = "follower.replication.throttled.rate"
	followerThrottleSpecKey = "follower-replication-throttled-rate"
)

// throttleRestWindow is how often a settled cluster whose throttle the
// operator tunes is looked at: each look closes a window of the brokers'
// produce latency at rest.
const throttleRestWindow = 15 * time.Second

// throttleMinWindow is the shortest window the throttle is decided on:
// reconciles that come sooner (a pod's or a status's change) neither read
// the brokers nor decide, so that a window holds enough requests to judge.
const throttleMinWindow = 4 * time.Second

// throttleMemory keeps, per cluster, the produce totals read last from
// each broker and the throttle decision's state between reconciles.
type throttleMemory struct {
	mu sync.Mutex
	m  map[types.NamespacedName]throttleEntry
}

type throttleEntry struct {
	totals map[int32]brokerclient.ProduceTotals
	read   time.Time // when totals were read
	state  throttle.State
}

// due says whether a window closes at now: throttleMinWindow has passed
// since the brokers were last read, or they never were.
func (m *throttleMemory) due(key types.NamespacedName, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[key]
	return !ok || e.read.IsZero() || now.Sub(e.read) >= throttleMinWindow
}

// window takes the brokers' produce totals read at, and returns the
// window since the last reading with the decision state as it was. A
// broker not read both times counts in neither.
func (m *throttleMemory) window(key types.NamespacedName, totals map[int32]brokerclient.ProduceTotals, at time.Time, catching bool) (throttle.Window, throttle.State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[types.NamespacedName]throttleEntry{}
	}
	e := m.m[key]
	w := throttle.Window{Catching: catching}
	var total time.Duration
	for id, t := range totals {
		if before, ok := e.totals[id]; ok {
			n, mean := t.Since(before)
			w.Requests += n
			total += time.Duration(n) * mean
		}
	}
	if w.Requests > 0 {
		w.Mean = total / time.Duration(w.Requests)
	}
	e.totals, e.read = totals, at
	m.m[key] = e
	return w, e.state
}

func (m *throttleMemory) put(key types.NamespacedName, st throttle.State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.m[key]
	e.state = st
	m.m[key] = e
}

// rate is the throttle last chosen for a cluster, 0 for none.
func (m *throttleMemory) rate(key types.NamespacedName) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[key].state.Rate
}

func (m *throttleMemory) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, key)
}

// tuneReplicationThrottle chooses the rate at which the brokers' replicas
// catch up, from how much the copies slow the producers (throttle.Decide),
// and sets it for every broker. spec.config's rate, or one set for every
// broker by other means (Kafka's tools), wins: the operator then sets
// none, and takes back only a value it set itself.
func (r *BrokerClusterReconciler) tuneReplicationThrottle(ctx context.Context, c *raftkav1.BrokerCluster, view brokersView, catching bool) {
	if view.mdErr != nil {
		return
	}
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	_, userRate := c.Spec.Config[followerThrottleSpecKey]
	off := c.Spec.Rebalancing == raftkav1.RebalancingOff || userRate
	switch {
	case off && c.Status.ReplicationThrottle == nil && r.throttles.rate(key) == 0:
		return // none of ours to take back
	case !off && !r.throttles.due(key, time.Now()):
		return
	}
	current, set, err := clusterFollowerThrottle(ctx, view.admin)
	if err != nil {
		log.FromContext(ctx).Info("replication throttle not read", "error", err.Error())
		return
	}
	// Its own value is the one its status shows, or, if that status
	// write was lost, the one it last chose: never a 0 (no bound) set by
	// hand, which equals the rate of a cluster it chose none for.
	last := r.throttles.rate(key)
	ours := set && (c.Status.ReplicationThrottle != nil && current == c.Status.ReplicationThrottle.BytesPerSecond ||
		last != 0 && current == last)
	if off || (set && !ours) {
		if ours {
			if err := r.setFollowerThrottle(ctx, view.admin, nil); err != nil {
				log.FromContext(ctx).Info("replication throttle not removed", "error", err.Error())
				return
			}
		}
		c.Status.ReplicationThrottle = nil
		r.throttles.forget(key)
		return
	}
	w, st := r.throttles.window(key, r.produceTotals(ctx, c), time.Now(), catching)
	if ours && st.Rate == 0 {
		// The operator restarted: carry on from the rate in force. One
		// other than the start was found by this move already, so it is
		// raised by quarters from there, not doubled as a new move's.
		st.Rate = current
		if current != throttle.DefaultPolicy.Start {
			st.SlowedAt = current
		}
	}
	next := throttle.Decide(w, st, throttle.DefaultPolicy)
	if !set || current != next.Rate {
		// Asked again just before the write, which would otherwise undo
		// a value set meanwhile with Kafka's tools (they have no
		// compare-and-set): the next reconcile then hands it over.
		if again, setAgain, err := clusterFollowerThrottle(ctx, view.admin); err != nil || again != current || setAgain != set {
			return
		}
		if err := r.setFollowerThrottle(ctx, view.admin, &next.Rate); err != nil {
			log.FromContext(ctx).Info("replication throttle not set", "error", err.Error())
			return
		}
		if set && r.Recorder != nil {
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "ReplicationThrottle", "SetThrottle", "replicas catch up at %s per broker: %s",
				mibPerSecond(next.Rate), next.Reason)
		}
	}
	// Kept only once in force: a decision not written would otherwise
	// count as the rate the next window was measured under.
	r.throttles.put(key, next)
	c.Status.ReplicationThrottle = &raftkav1.ReplicationThrottleStatus{BytesPerSecond: next.Rate, Reason: next.Reason}
}

// produceTotals reads each kept broker's produce totals; a broker that
// does not answer is left out.
func (r *BrokerClusterReconciler) produceTotals(ctx context.Context, c *raftkav1.BrokerCluster) map[int32]brokerclient.ProduceTotals {
	out := map[int32]brokerclient.ProduceTotals{}
	for id := range c.Spec.Replicas {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		t, err := brokerclient.ProduceLatency(cctx, r.HTTPAddr(c, id))
		cancel()
		if err == nil {
			out[id] = t
		}
	}
	return out
}

// clusterFollowerThrottle is the follower throttle set for every broker
// at run time, and whether one is.
func clusterFollowerThrottle(ctx context.Context, adm *kadm.Client) (int64, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rcs, err := adm.DescribeBrokerConfigs(cctx)
	if err != nil {
		return 0, false, err
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return 0, false, rc.Err
		}
		for _, cfg := range rc.Configs {
			if cfg.Key == followerThrottleKey && cfg.Source == kmsg.ConfigSourceDynamicDefaultBrokerConfig && cfg.Value != nil {
				v, err := strconv.ParseInt(*cfg.Value, 10, 64)
				return v, err == nil, nil
			}
		}
	}
	return 0, false, nil
}

// setFollowerThrottle sets the follower throttle for every broker, or
// removes it for nil.
func (r *BrokerClusterReconciler) setFollowerThrottle(ctx context.Context, adm *kadm.Client, rate *int64) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	alter := kadm.AlterConfig{Op: kadm.DeleteConfig, Name: followerThrottleKey}
	if rate != nil {
		v := strconv.FormatInt(*rate, 10)
		alter = kadm.AlterConfig{Op: kadm.SetConfig, Name: followerThrottleKey, Value: &v}
	}
	resp, err := adm.AlterBrokerConfigs(cctx, []kadm.AlterConfig{alter})
	if err != nil {
		return err
	}
	for _, r := range resp {
		if r.Err != nil {
			return fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
		}
	}
	return nil
}

func mibPerSecond(rate int64) string { return fmt.Sprintf("%.1f MiB/s", float64(rate)/(1<<20)) }
