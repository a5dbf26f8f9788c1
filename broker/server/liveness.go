package server

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/raftka/raftka/broker/meta"
)

const (
	livenessInterval = 250 * time.Millisecond
	livenessWindow   = 1500 * time.Millisecond
)

// liveness tracks which brokers answer on their Raft address. A replica
// counts as in sync for min.insync.replicas when its broker is live and it
// keeps up with its leader (insync.go); Raft's own majority commit is what
// makes an acknowledged write durable.
type liveness struct {
	self     int32
	mu       sync.RWMutex
	lastSeen map[int32]time.Time
}

func newLiveness(self int32) *liveness {
	return &liveness{self: self, lastSeen: map[int32]time.Time{}}
}

func (l *liveness) isLive(id int32) bool {
	if id == l.self {
		return true
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return time.Since(l.lastSeen[id]) < livenessWindow
}

func (l *liveness) run(b *Broker) func(context.Context) {
	return func(ctx context.Context) {
		t := time.NewTicker(livenessInterval)
		defer t.Stop()
		for {
			var peers []meta.Broker
			b.meta.Read(func(s *meta.State) {
				for _, br := range s.Brokers() {
					if br.ID != l.self {
						peers = append(peers, br)
					}
				}
			})
			var wg sync.WaitGroup
			for _, p := range peers {
				wg.Add(1)
				go func(p meta.Broker) {
					defer wg.Done()
					l.probe(p)
				}(p)
			}
			wg.Wait()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}
}

// confirm probes now, in parallel, those of the brokers that the periodic
// probes have not seen within the window: a broker that registered after
// their last round, or in the moment after this one started, is live, not
// gone, and a decision about new partitions (who leads them first) should
// not take it for gone.
func (l *liveness) confirm(brokers []meta.Broker) {
	var wg sync.WaitGroup
	for _, br := range brokers {
		if br.RaftAddr == "" || l.isLive(br.ID) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.probe(br)
		}()
	}
	wg.Wait()
}

// probe dials a broker's Raft address once and reports whether it
// answered, which it records.
func (l *liveness) probe(p meta.Broker) bool {
	c, err := net.DialTimeout("tcp", p.RaftAddr, livenessInterval)
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
