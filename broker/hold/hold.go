package hold

import (
	"context"
	"log/slog"
	"time"

	"github.com/raftka/raftka/broker/growth"
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

// Metrics counts the lifts this broker proposed.
type Metrics interface {
	Lifted(topic string, reason growth.Reason)
}

// Deps are the loops' dependencies.
type Deps struct {
	ID         int32
	Meta       Metadata
	Replicas   Replicas
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
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for {
		changed := d.Meta.Changed()
		reportSplits(ctx, d)
		classify(ctx, d)
		if id, ok := d.MetaLeader(); ok && id == d.ID {
			liftHolds(ctx, d)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
			// Offset commits change the metadata many times a second;
			// a pass at most every calm keeps the loop light.
			time.Sleep(calm)
		case <-tick.C:
		}
	}
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
// group window before the growth, or since.
func countedCommits(s *meta.State, t *meta.Topic, g meta.Growth) growth.Commits {
	since := g.ProposedAt - t.Int(meta.ConfigGrowthGroupWindow)
	counted := growth.Commits{}
	for _, group := range s.GroupsCommittedOn(t.Name, since) {
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
