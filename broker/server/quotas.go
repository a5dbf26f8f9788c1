package server

import (
	"context"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/internal/wait"
)

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
	return d <= 0 || wait.Sleep(ctx, d)
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
