package replica

import (
	"context"
	"strconv"
	"sync"

	"golang.org/x/time/rate"

	"github.com/raftka/raftka/broker/meta"
)

// replicationThrottle bounds the bytes per second that replicas catching
// up copy, so that a reassignment or a replaced disk does not starve
// producers: follower.replication.throttled.rate what this broker's
// replicas fetch from their peers, leader.replication.throttled.rate what
// it serves to peers' replicas, as Kafka's broker configs of those names
// do. A value set at run time for this broker, then one for every broker,
// then the flag, applies; none is no bound. A replica catching up copies
// the records its snapshot names through follower fetches (catchup.go);
// what a group's Raft log still holds reaches it through Raft, unbounded,
// which is at most --raft-log-retain-bytes or two.
type replicationThrottle struct {
	b                *Manager
	mu               sync.Mutex
	leader, follower *rate.Limiter
}

// throttleBurst is the most bytes taken at once; a larger read waits in
// parts.
const throttleBurst = 1 << 20

func newReplicationThrottle(b *Manager) *replicationThrottle {
	return &replicationThrottle{b: b, leader: rate.NewLimiter(rate.Inf, throttleBurst), follower: rate.NewLimiter(rate.Inf, throttleBurst)}
}

// waitFollower waits until this broker's replicas may have fetched n
// more bytes.
func (t *replicationThrottle) waitFollower(ctx context.Context, n int) error {
	return t.wait(ctx, t.follower, meta.BrokerConfigFollowerThrottledRate, t.b.cfg.FollowerThrottledRate, n)
}

// waitLeader waits until this broker may have served n more bytes to
// peers' replicas.
func (t *replicationThrottle) waitLeader(ctx context.Context, n int) error {
	return t.wait(ctx, t.leader, meta.BrokerConfigLeaderThrottledRate, t.b.cfg.LeaderThrottledRate, n)
}

func (t *replicationThrottle) wait(ctx context.Context, l *rate.Limiter, key string, flag int64, n int) error {
	perSecond := flag
	t.b.Meta.Read(func(s *meta.State) {
		if v, ok := s.BrokerConfig(t.b.cfg.ID, key); ok {
			perSecond, _ = strconv.ParseInt(v, 10, 64)
		}
	})
	limit := rate.Inf
	if perSecond > 0 {
		limit = rate.Limit(perSecond)
	}
	t.mu.Lock()
	if l.Limit() != limit {
		l.SetLimit(limit)
	}
	t.mu.Unlock()
	for n > 0 {
		part := min(n, throttleBurst)
		if err := l.WaitN(ctx, part); err != nil {
			return err
		}
		n -= part
	}
	return nil
}
