package server

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/quota"
)

// clientQuotas measures, on this broker, each client's produce request
// bytes and fetch response bytes against the quota the metadata resolves
// for its user and client id (quota.Resolve), and says how long a client
// over its quota must pause. As in Kafka, the quota holds per broker, and
// a throttled response is sent at once with throttle_time_ms while the
// connection reads no further request for that long (KIP-219).
type clientQuotas struct {
	b  *Broker
	mu sync.Mutex
	// windows are keyed by the quota key and the entity the client's use
	// counts against (quota.Resolve's bucket; Entity.String is unique).
	windows map[string]*quota.Window
}

// maxQuotaBuckets bounds the buckets kept before idle ones are dropped.
const maxQuotaBuckets = 10000

func newClientQuotas(b *Broker) *clientQuotas {
	return &clientQuotas{b: b, windows: map[string]*quota.Window{}}
}

// record adds n bytes of a client's use of key at now and returns how long
// it must pause: 0 without a quota or within it. refund takes the bytes
// back out when the client must pause: a fetch over its quota is answered
// without them, as Kafka's brokers unrecord it.
func (q *clientQuotas) record(key, user, clientID string, n int, now time.Time, refund bool) time.Duration {
	var limit float64
	var entity quota.Entity
	var ok bool
	q.b.meta.Read(func(s *meta.State) {
		if len(s.ClientQuotas()) > 0 {
			limit, entity, ok = quota.Resolve(s.ClientQuotas(), key, user, clientID)
		}
	})
	if !ok {
		return 0
	}
	bucket := key + " " + entity.String()
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.windows[bucket]
	if w == nil {
		if len(q.windows) >= maxQuotaBuckets {
			for k, old := range q.windows {
				if old.Idle(now) {
					delete(q.windows, k)
				}
			}
		}
		w = q.b.cfg.QuotaWindowing.NewWindow()
		q.windows[bucket] = w
	}
	w.Record(now, float64(n))
	rate, window := w.Rate(now)
	throttle := q.b.cfg.QuotaWindowing.Throttle(rate, limit, window)
	if throttle > 0 {
		q.b.metrics.throttled.WithLabelValues(key).Inc()
		if refund {
			w.Record(now, -float64(n))
		}
	}
	return throttle
}

// quotaUse is a request's client, for its quotas, and the throttle time
// its request already earned.
type quotaUse struct {
	user, clientID string
	throttle       time.Duration
	// exempt: a broker's own fetch for its replicas, which replication
	// throttling bounds instead, as in Kafka.
	exempt bool
}

// isReplicaFetch tells whether a request is a broker's fetch for its
// replicas.
func isReplicaFetch(kreq kmsg.Request) bool {
	f, ok := kreq.(*kmsg.FetchRequest)
	return ok && (f.Version < 15 && f.ReplicaID >= 0 || f.Version >= 15 && f.ReplicaState.ID >= 0)
}

// quotaUser is the user name a connection's quotas resolve with: its
// principal's, ANONYMOUS without authentication. Read in the connection's
// reader, which alone touches its authentication.
func (c *clientConn) quotaUser() string {
	return strings.TrimPrefix(c.principal(), "User:")
}

// mute stops the connection's reader from taking another request for d.
func (c *clientConn) mute(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitUnmuted sleeps out a mute; false if the broker stops meanwhile.
func (c *clientConn) waitUnmuted(ctx context.Context) bool {
	d := time.Until(time.Unix(0, c.mutedUntil.Load()))
	return d <= 0 || sleep(ctx, d)
}

// setThrottle carries a throttle time in the responses that have one.
func setThrottle(resp kmsg.Response, d time.Duration) {
	ms := int32(d / time.Millisecond)
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		r.ThrottleMillis = ms
	case *kmsg.FetchResponse:
		r.ThrottleMillis = ms
	}
}
