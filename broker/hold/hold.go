package hold

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/raftka/raftka/broker/growth"
	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
)

// Metadata is what the loops read of the metadata.
type Metadata interface {
	Read(func(*meta.State))
	Changed() <-chan struct{}
}

// Replicas answers for the partition replicas this broker hosts.
type Replicas interface {
	IsLeader(shard uint64) bool
	// PartitionLog is the log of this broker's replica of shard, false if
	// it holds none.
	PartitionLog(shard uint64) (*partition.Log, bool)
}

// Groups answers for the consumer groups this broker coordinates.
type Groups interface {
	// SubscribedTo names the groups with a member subscribed to topic.
	SubscribedTo(topic string) []string
}

// Metrics counts the lifts this broker proposed.
type Metrics interface {
	Lifted(topic string, reason growth.Reason)
}

// Deps are the loops' dependencies.
type Deps struct {
	ID         int32
	Meta       Metadata
	Replicas   Replicas
	Groups     Groups
	Propose    func(context.Context, *meta.Command) (meta.Outcome, error)
	MetaLeader func() (int32, bool)
	Metrics    Metrics
	Log        *slog.Logger
	// Now is the clock, time.Now unless a test sets it.
	Now func() time.Time
}

// Interval is how often the loops look when nothing wakes them: a lift
// waits for time to pass (growth.Settings), which no metadata change
// announces.
const Interval = 250 * time.Millisecond

// calm is the least time between two passes that metadata changes woke.
const calm = 50 * time.Millisecond

// Run reports splits and lifts holds until ctx ends.
func Run(ctx context.Context, d Deps) {
	if d.Now == nil {
		d.Now = time.Now
	}
	wait.OnChange(ctx, d.Meta.Changed, calm, Interval, func() {
		noteGroups(ctx, d)
		reportSplits(ctx, d)
		classify(ctx, d)
		reportDelivered(ctx, d)
		if id, ok := d.MetaLeader(); ok && id == d.ID {
			liftHolds(ctx, d)
		}
	})
}

// reportSplits proposes the split of every old partition of a hidden
// growth that this broker leads and that has none yet: its high
// watermark, below which every record was placed by the old count, since
// no client was shown the new one.
func reportSplits(ctx context.Context, d Deps) {
	var todo []meta.RecordSplit
	d.Meta.Read(func(s *meta.State) {
		for _, t := range s.GrowingTopics() {
			for _, g := range t.Growths {
				if !g.Hidden() {
					continue
				}
				for i, split := range g.Splits {
					shard := t.Partitions[i].Shard
					if split >= 0 || !d.Replicas.IsLeader(shard) {
						continue
					}
					if log, ok := d.Replicas.PartitionLog(shard); ok {
						_, hw := log.Offsets()
						todo = append(todo, meta.RecordSplit{Topic: t.Name, Seq: g.Seq, Partition: int32(i), Offset: hw})
					}
				}
			}
		}
	})
	for _, c := range todo {
		c.At = d.Now().UnixMilli()
		if _, err := propose(ctx, d, &meta.Command{RecordSplit: &c}); err != nil {
			d.Log.Debug("split not recorded, tried again", "topic", c.Topic, "partition", c.Partition, "err", err)
		}
	}
}

// noteGroups records, for each growth in progress, the groups this broker
// coordinates whose members subscribe to the topic and that the growth
// has not noted (Growth.Joined). A group that consumes but has not
// committed yet then holds the growth as a committing one does; noting
// it while the growth is hidden lets its first OffsetFetch of a new
// partition start at the log start.
func noteGroups(ctx context.Context, d Deps) {
	type growing struct {
		topic  string
		seq    int
		joined map[string]int64
	}
	var growths []growing
	d.Meta.Read(func(s *meta.State) {
		for _, t := range s.GrowingTopics() {
			for _, g := range t.Growths {
				growths = append(growths, growing{topic: t.Name, seq: g.Seq, joined: maps.Clone(g.Joined)})
			}
		}
	})
	// The coordinator is asked outside the metadata's lock.
	for _, g := range growths {
		var groups []string
		for _, group := range d.Groups.SubscribedTo(g.topic) {
			if _, ok := g.joined[group]; !ok {
				groups = append(groups, group)
			}
		}
		if len(groups) == 0 {
			continue
		}
		c := meta.NoteGroups{Topic: g.topic, Seq: g.seq, Groups: groups, At: d.Now().UnixMilli()}
		if _, err := propose(ctx, d, &meta.Command{NoteGroups: &c}); err != nil {
			d.Log.Debug("groups not noted, tried again", "topic", c.Topic, "groups", c.Groups, "err", err)
		}
	}
}

// liftHolds proposes to lift each topic's earliest held growth that
// growth.Decide lets go.
func liftHolds(ctx context.Context, d Deps) {
	now := d.Now()
	var lifts []meta.LiftGrowth
	d.Meta.Read(func(s *meta.State) {
		for _, t := range s.GrowingTopics() {
			if len(t.Growths) == 0 || t.Growths[0].Hidden() {
				continue
			}
			g := t.Growths[0]
			reason := growth.Decide(now, g.Rule(), t.GrowthSettings(), countedCommits(s, t, g))
			if reason != growth.NotYet {
				lifts = append(lifts, meta.LiftGrowth{Topic: t.Name, Seq: g.Seq, Reason: string(reason), At: now.UnixMilli()})
			}
		}
	})
	for _, c := range lifts {
		out, err := propose(ctx, d, &meta.Command{LiftGrowth: &c})
		if err != nil || out.Err != nil {
			continue // asked again on the next pass
		}
		d.Metrics.Lifted(c.Topic, growth.Reason(c.Reason))
		level := slog.LevelInfo
		if c.Reason == string(growth.Bound) {
			level = slog.LevelWarn // a group may read a key out of order
		}
		d.Log.Log(ctx, level, "ordered growth lifted", "topic", c.Topic, "growth", c.Seq, "reason", c.Reason)
	}
}

// countedCommits are the committed offsets, on g's old partitions, of the
// groups that count for g: those that committed on the topic within the
// group window before the growth, or since, and those whose members
// subscribed to it during the growth (Growth.Joined), committed or not.
func countedCommits(s *meta.State, t *meta.Topic, g meta.Growth) growth.Commits {
	since := g.ProposedAt - t.Int(meta.ConfigGrowthGroupWindow)
	groups := s.GroupsCommittedOn(t.Name, since)
	for group := range g.Joined {
		if !slices.Contains(groups, group) {
			groups = append(groups, group)
		}
	}
	counted := growth.Commits{}
	for _, group := range groups {
		offsets := map[int32]int64{}
		for p := range g.From {
			if o, ok := s.GroupOffset(group, t.Name, p); ok {
				offsets[p] = o.Offset
			}
		}
		counted[group] = offsets
	}
	return counted
}

// proposeTimeout bounds a proposal of the loops: Raft needs a deadline,
// and a proposal that fails is made again on a later pass.
const proposeTimeout = 5 * time.Second

func propose(ctx context.Context, d Deps, cmd *meta.Command) (meta.Outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	return d.Propose(ctx, cmd)
}
