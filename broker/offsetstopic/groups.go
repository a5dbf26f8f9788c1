package offsetstopic

import (
	"bytes"
	"context"
	"log/slog"
	"time"

	"github.com/raftka/raftka/broker/groups"
	"github.com/raftka/raftka/broker/meta"
)

// Groups is what the loop reads of this broker's group coordinator.
type Groups interface {
	List() map[string][2]string
	Describe(group string) (groups.Description, bool)
}

// Metadata is what the loop reads of the metadata.
type Metadata interface {
	Read(func(*meta.State))
}

// Deps are the loop's dependencies.
type Deps struct {
	Groups Groups
	Meta   Metadata
	// Coordinating tells whether this broker coordinates groups now.
	Coordinating func() bool
	Propose      func(context.Context, *meta.Command) (meta.Outcome, error)
	Log          *slog.Logger
	// Now is the clock, time.Now unless a test sets it.
	Now func() time.Time
}

// interval is how often the coordinator's groups are compared with what
// the metadata recorded: a reader of __consumer_offsets sees a rebalance
// about this long after it completed.
const interval = 500 * time.Millisecond

// Run records, while this broker coordinates, the membership of each group
// that completed a rebalance (Stable) or emptied, when it differs from
// what the metadata holds, until ctx ends. It is level-based: a proposal
// lost to a leadership change is made again at the next pass, by this
// broker or the next coordinator once its groups settle.
func Run(ctx context.Context, d Deps) {
	if d.Now == nil {
		d.Now = time.Now
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if d.Coordinating() {
			recordGroups(ctx, d)
		}
	}
}

func recordGroups(ctx context.Context, d Deps) {
	for id, state := range d.Groups.List() {
		if state[0] != groups.StateStable && state[0] != groups.StateEmpty {
			continue // mid-rebalance: Kafka writes the group once it completes
		}
		desc, ok := d.Groups.Describe(id)
		if !ok {
			continue
		}
		want := desc.Recorded()
		var recorded meta.GroupMetadata
		var known bool
		d.Meta.Read(func(s *meta.State) { recorded, known = s.RecordedGroupMetadata(id) })
		if known && sameMembership(recorded, want) {
			continue
		}
		want.At = d.Now().UnixMilli()
		if err := propose(ctx, d, &meta.Command{RecordGroupMetadata: &meta.RecordGroupMetadata{Group: id, Metadata: want}}); err != nil {
			d.Log.Debug("group metadata not recorded, tried again", "group", id, "err", err)
		}
	}
}

// proposeTimeout bounds one proposal; a pass that gave up proposes again.
const proposeTimeout = 5 * time.Second

func propose(ctx context.Context, d Deps, c *meta.Command) error {
	ctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	_, err := d.Propose(ctx, c)
	return err
}

// sameMembership compares all but the time the state was reached; nil
// and empty bytes are alike, as a command's JSON makes them.
func sameMembership(a, b meta.GroupMetadata) bool {
	if a.ProtocolType != b.ProtocolType || a.Generation != b.Generation || a.Protocol != b.Protocol || a.Leader != b.Leader ||
		len(a.Members) != len(b.Members) {
		return false
	}
	for i, m := range a.Members {
		o := b.Members[i]
		if m.ID != o.ID || m.InstanceID != o.InstanceID || m.ClientID != o.ClientID || m.ClientHost != o.ClientHost ||
			m.RebalanceTimeoutMillis != o.RebalanceTimeoutMillis || m.SessionTimeoutMillis != o.SessionTimeoutMillis ||
			!bytes.Equal(m.Subscription, o.Subscription) || !bytes.Equal(m.Assignment, o.Assignment) {
			return false
		}
	}
	return true
}
