package security

import (
	"sync"
	"time"

	"github.com/raftka/raftka/broker/quota"
)

// QuotaConfigs is where client quotas are found: the metadata, which
// resolves a client's quota within its own read (quota.Resolve).
type QuotaConfigs interface {
	ResolveClientQuota(key, user, clientID string) (limit float64, bucket quota.Entity, ok bool)
}

// Quotas measures, on this broker, each client's produce request bytes
// and fetch response bytes against the quota the metadata resolves for
// its user and client id, and says how long a client over its quota must
// pause. As in Kafka, the quota holds per broker, and a throttled
// response is sent at once with throttle_time_ms while the connection
// reads no further request for that long (KIP-219).
type Quotas struct {
	configs   QuotaConfigs
	windowing quota.Windowing
	// throttled is told of each throttle, by quota key (a metric).
	throttled func(key string)
	mu        sync.Mutex
	// windows are keyed by the quota key and the entity the client's use
	// counts against (quota.Resolve's bucket; Entity.String is unique).
	windows map[string]*quota.Window
}

// maxQuotaBuckets bounds the buckets kept before idle ones are dropped.
const maxQuotaBuckets = 10000

// NewQuotas measures against configs' quotas with windowing; throttled is
// told of each throttle.
func NewQuotas(configs QuotaConfigs, windowing quota.Windowing, throttled func(key string)) *Quotas {
	return &Quotas{configs: configs, windowing: windowing, throttled: throttled, windows: map[string]*quota.Window{}}
}

// Record adds n bytes of a client's use of key at now and returns how long
// it must pause: 0 without a quota or within it. refund takes the bytes
// back out when the client must pause: a fetch over its quota is answered
// without them, as Kafka's brokers unrecord it.
func (q *Quotas) Record(key, user, clientID string, n int, now time.Time, refund bool) time.Duration {
	limit, entity, ok := q.configs.ResolveClientQuota(key, user, clientID)
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
		w = q.windowing.NewWindow()
		q.windows[bucket] = w
	}
	w.Record(now, float64(n))
	rate, window := w.Rate(now)
	throttle := q.windowing.Throttle(rate, limit, window)
	if throttle > 0 {
		q.throttled(key)
		if refund {
			w.Record(now, -float64(n))
		}
	}
	return throttle
}
