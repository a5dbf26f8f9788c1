package quota

import (
	"fmt"
	"time"
)

// Entity types and quota keys, with Kafka's names.
const (
	EntityUser     = "user"
	EntityClientID = "client-id"
	// ProducerByteRate bounds the bytes/s of a client's produce requests,
	// ConsumerByteRate those of its fetch responses, on each broker.
	ProducerByteRate = "producer_byte_rate"
	ConsumerByteRate = "consumer_byte_rate"
)

// Name is one component of an entity: a name, or its type's default.
type Name struct {
	Name    string `json:",omitempty"`
	Default bool   `json:",omitempty"`
}

// Entity is whom a quota is for: a user, a client id, or both; nil
// components are absent.
type Entity struct {
	User     *Name `json:",omitempty"`
	ClientID *Name `json:",omitempty"`
}

func sameName(a, b *Name) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// Equal tells whether two entities are the same.
func (e Entity) Equal(o Entity) bool {
	return sameName(e.User, o.User) && sameName(e.ClientID, o.ClientID)
}

func (e Entity) String() string {
	part := func(t string, n *Name) string {
		switch {
		case n == nil:
			return ""
		case n.Default:
			return t + "=<default>"
		}
		return fmt.Sprintf("%s=%q", t, n.Name)
	}
	u, c := part(EntityUser, e.User), part(EntityClientID, e.ClientID)
	if u != "" && c != "" {
		return u + "," + c
	}
	return u + c
}

// Config is an entity's quota values, by key.
type Config struct {
	Entity Entity
	Values map[string]float64
}

// Resolve returns the limit on key for a client of this user and client
// id, and the bucket its use counts against, by Kafka's precedence: the
// user and client id, the user and the default client id, the user, the
// default user and the client id, the default user and the default client
// id, the default user, the client id, the default client id. A default
// stands for each name on its own: the bucket names the client's user and
// client id where the matched entity has the component. ok is false when
// no config sets the key.
func Resolve(configs []Config, key, user, clientID string) (limit float64, bucket Entity, ok bool) {
	named := func(n string) *Name { return &Name{Name: n} }
	deflt := &Name{Default: true}
	order := []Entity{
		{User: named(user), ClientID: named(clientID)},
		{User: named(user), ClientID: deflt},
		{User: named(user)},
		{User: deflt, ClientID: named(clientID)},
		{User: deflt, ClientID: deflt},
		{User: deflt},
		{ClientID: named(clientID)},
		{ClientID: deflt},
	}
	for _, want := range order {
		for _, c := range configs {
			v, set := c.Values[key]
			if !set || !c.Entity.Equal(want) {
				continue
			}
			if want.User != nil {
				bucket.User = named(user)
			}
			if want.ClientID != nil {
				bucket.ClientID = named(clientID)
			}
			return v, bucket, true
		}
	}
	return 0, Entity{}, false
}

// Windowing is how rates are measured: Samples samples of Length each
// (Kafka's quota.window.num and quota.window.size.seconds).
type Windowing struct {
	Samples int
	Length  time.Duration
}

// DefaultWindowing is Kafka's: 11 samples of a second.
var DefaultWindowing = Windowing{Samples: 11, Length: time.Second}

// span is the whole window, which also bounds a throttle time.
func (c Windowing) span() time.Duration { return time.Duration(c.Samples) * c.Length }

// Window measures a rate over the last samples, as Kafka's Rate does.
type Window struct {
	cfg    Windowing
	starts []time.Time
	sums   []float64
	cur    int
}

// NewWindow is an empty window.
func (c Windowing) NewWindow() *Window {
	return &Window{cfg: c, starts: make([]time.Time, c.Samples), sums: make([]float64, c.Samples)}
}

// Record adds n at now.
func (w *Window) Record(now time.Time, n float64) {
	if w.starts[w.cur].IsZero() || now.Sub(w.starts[w.cur]) >= w.cfg.Length {
		w.cur = (w.cur + 1) % w.cfg.Samples
		w.starts[w.cur], w.sums[w.cur] = now, 0
	}
	w.sums[w.cur] += n
}

// Rate returns the rate per second at now and the window it was measured
// over: from the oldest sample still within the window, and at least
// samples-1 sample lengths, so that a client's first burst is spread over
// the whole window rather than its first instant.
func (w *Window) Rate(now time.Time) (float64, time.Duration) {
	var total float64
	var oldest time.Time
	for i, s := range w.starts {
		if s.IsZero() || now.Sub(s) >= w.cfg.span() {
			continue
		}
		total += w.sums[i]
		if oldest.IsZero() || s.Before(oldest) {
			oldest = s
		}
	}
	elapsed := time.Duration(0)
	if !oldest.IsZero() {
		elapsed = now.Sub(oldest)
	}
	if full := int(elapsed / w.cfg.Length); full < w.cfg.Samples-1 {
		elapsed += time.Duration(w.cfg.Samples-1-full) * w.cfg.Length
	}
	return total / elapsed.Seconds(), elapsed
}

// Idle tells whether nothing was recorded within the window.
func (w *Window) Idle(now time.Time) bool {
	return w.starts[w.cur].IsZero() || now.Sub(w.starts[w.cur]) >= w.cfg.span()
}

// Throttle is how long a client observed at rate over window must pause
// for its rate to come down to limit (Kafka's ClientQuotaManager); 0 within
// the limit, and at most the whole window.
func (c Windowing) Throttle(rate, limit float64, window time.Duration) time.Duration {
	if limit <= 0 || rate <= limit {
		return 0
	}
	d := (rate - limit) / limit * float64(window)
	if d >= float64(c.span()) {
		return c.span()
	}
	return time.Duration(d)
}
