package cluster

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/raftka/raftka/broker/meta"
)

const (
	// LivenessInterval is how often the other brokers are probed.
	LivenessInterval = 250 * time.Millisecond
	// LivenessWindow is how long a broker counts as live after it last
	// answered.
	LivenessWindow = 1500 * time.Millisecond
)

// Registry is where the brokers to probe are found: the metadata.
type Registry interface {
	Brokers() []meta.Broker
}

// Liveness tracks which brokers answer on their Raft address. A replica
// counts as in sync for min.insync.replicas when its broker is live and it
// keeps up with its leader; Raft's own majority commit is what makes an
// acknowledged write durable.
type Liveness struct {
	self     int32
	brokers  Registry
	mu       sync.RWMutex
	lastSeen map[int32]time.Time
}

// NewLiveness tracks the brokers of registry other than self, which is
// always live.
func NewLiveness(self int32, registry Registry) *Liveness {
	return &Liveness{self: self, brokers: registry, lastSeen: map[int32]time.Time{}}
}

// IsLive tells whether a broker answered within the window.
func (l *Liveness) IsLive(id int32) bool {
	if id == l.self {
		return true
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return time.Since(l.lastSeen[id]) < LivenessWindow
}

// Run probes every other registered broker each LivenessInterval until
// ctx ends.
func (l *Liveness) Run(ctx context.Context) {
	t := time.NewTicker(LivenessInterval)
	defer t.Stop()
	for {
		var wg sync.WaitGroup
		for _, p := range l.brokers.Brokers() {
			if p.ID != l.self {
				wg.Go(func() { l.Probe(p) })
			}
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Confirm probes now, in parallel, those of the brokers that the periodic
// probes have not seen within the window: a broker that registered after
// their last round, or in the moment after this one started, is live, not
// gone, and a decision about new partitions (who leads them first) should
// not take it for gone.
func (l *Liveness) Confirm(brokers []meta.Broker) {
	var wg sync.WaitGroup
	for _, br := range brokers {
		if br.RaftAddr == "" || l.IsLive(br.ID) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Probe(br)
		}()
	}
	wg.Wait()
}

// Probe dials a broker's Raft address once and reports whether it
// answered, which it records.
func (l *Liveness) Probe(p meta.Broker) bool {
	c, err := net.DialTimeout("tcp", p.RaftAddr, LivenessInterval)
	if err != nil {
		return false
	}
	// A dial to a closed port in the ephemeral range can connect to
	// itself (TCP simultaneous open): that is no peer.
	self := c.LocalAddr().String() == c.RemoteAddr().String()
	c.Close()
	if self {
		return false
	}
	l.mu.Lock()
	l.lastSeen[p.ID] = time.Now()
	l.mu.Unlock()
	return true
}
