package cluster

import (
	"context"
	"crypto/tls"
	"io"
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
	// probeTimeout bounds one probe, from the dial to the answer.
	probeTimeout = 2 * LivenessInterval
)

// Registry is where the brokers to probe are found: the metadata.
type Registry interface {
	Brokers() []meta.Broker
}

// Liveness tracks which brokers answer on their Raft address. A probe is
// an answer of the broker's Raft transport, not a connect: Dragonboat
// answers its two poison bytes with the same two bytes, which a paused or
// wedged process cannot do, while the kernel accepts its connections
// alone. With the Raft transport's mutual TLS, the probe shows the Raft
// certificate as Dragonboat's own connections do. A replica
// counts as in sync for min.insync.replicas when its broker is live and it
// keeps up with its leader; Raft's own majority commit is what makes an
// acknowledged write durable.
type Liveness struct {
	self    int32
	brokers Registry
	// tlsFor is the TLS configuration of a connection to a peer's Raft
	// address; nil without the Raft transport's TLS.
	tlsFor   func(addr string) *tls.Config
	mu       sync.RWMutex
	lastSeen map[int32]time.Time
	// lastFailed is when a probe of a broker last failed.
	lastFailed map[int32]time.Time
}

// NewLiveness tracks the brokers of registry other than self, which is
// always live; tlsFor configures the probes' TLS, and is nil without it.
func NewLiveness(self int32, registry Registry, tlsFor func(addr string) *tls.Config) *Liveness {
	return &Liveness{self: self, brokers: registry, tlsFor: tlsFor, lastSeen: map[int32]time.Time{}, lastFailed: map[int32]time.Time{}}
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

// Unreachable tells whether the latest probe of a broker failed. A
// SIGKILLed broker's port refuses at once, so this says so up to a window
// before IsLive stops counting the broker, which is what a quiet Raft
// group's followers wait on (replica.quietGroups).
func (l *Liveness) Unreachable(id int32) bool {
	if id == l.self {
		return false
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.lastFailed[id].After(l.lastSeen[id])
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

// Probe asks a broker's Raft transport for an answer once and reports
// whether it answered, which it records.
func (l *Liveness) Probe(p meta.Broker) bool {
	answered := l.ping(p.RaftAddr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if answered {
		l.lastSeen[p.ID] = time.Now()
	} else {
		l.lastFailed[p.ID] = time.Now()
	}
	return answered
}

// poison is what Dragonboat's transport takes, in place of its magic
// number, for a peer closing the connection; it answers with the same
// bytes and closes its end.
var poison = []byte{0, 0}

// ping sends poison to a Raft address and waits for the answer.
func (l *Liveness) ping(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return false
	}
	defer c.Close()
	// A dial to a closed port in the ephemeral range can connect to
	// itself (TCP simultaneous open): that is no peer.
	if c.LocalAddr().String() == c.RemoteAddr().String() {
		return false
	}
	if err := c.SetDeadline(time.Now().Add(probeTimeout)); err != nil {
		return false
	}
	if l.tlsFor != nil {
		if config := l.tlsFor(addr); config != nil {
			c = tls.Client(c, config)
		}
	}
	answer := make([]byte, len(poison))
	if _, err := c.Write(poison); err != nil {
		return false
	}
	_, err = io.ReadFull(c, answer)
	return err == nil && string(answer) == string(poison)
}
