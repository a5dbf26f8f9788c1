package meta

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/raftka/raftka/broker/growth"
)

// Growth is an ordered growth of a topic that has not lifted yet
// (docs/design/ordered-growth.md). Times are Unix milliseconds of the
// clock of the broker that proposed them, carried in the commands, so
// every replica records the same.
type Growth struct {
	Seq      int
	From, To int32
	// ProposedAt is when CreatePartitions was proposed.
	ProposedAt int64
	// Splits are the old partitions' split offsets, by index; -1 until the
	// partition's leader reported it (RecordSplit).
	Splits []int64
	// VisibleAt is when the last split was reported and clients were
	// shown To partitions; 0 while the growth is hidden.
	VisibleAt int64 `json:",omitempty"`
	// Holds are where each old partition holds its consumers: from its
	// split, raised as its leader classifies the records after it, up to
	// the first that moved in from another old partition (Blocked then).
	// Scanned is how far the leader classified. Releases are what the
	// counted groups must reach before the hold lifts: the split, raised
	// past every stale record. All -1 until the split is in.
	Holds    []int64
	Blocked  []bool
	Scanned  []int64
	Releases []int64
	// Delivered are, for each old partition, the offset just past the
	// last record below its release that a read_committed consumer is
	// given, as its leader found once no transaction below the release
	// was open (RecordDelivered): a group commits past that record, never
	// past the markers and aborted records after it, so a group there has
	// read everything below the release. -1 (or absent) until reported,
	// and again when the release rises.
	Delivered []int64 `json:",omitempty"`
	// LastStaleAt is when the last stale record was taken; 0 for none.
	LastStaleAt int64 `json:",omitempty"`
	// Joined are the groups whose members subscribed to the topic while
	// the growth was in progress, with when their coordinator noted it
	// (NoteGroups). They count as groups that commit on the topic: a group
	// whose first commit is still to come (a consumer that just started,
	// with a backlog to work through) holds the growth too.
	Joined map[string]int64 `json:",omitempty"`
}

// GrowthLift is a topic's latest lifted growth, kept for its status.
type GrowthLift struct {
	Seq    int
	Reason string
	At     int64
	// HeldMs is how long consumers were held: from visible to lift.
	HeldMs int64
}

// RecordSplit reports an old partition's split offset for a hidden
// growth: its high watermark, read by its leader.
type RecordSplit struct {
	Topic     string
	Seq       int
	Partition int32
	Offset    int64
	At        int64
}

// AdvanceHold reports what the leader of an old partition found in its
// records from the partition's Scanned offset up to Scanned: the first
// record that moved in (MovedIn, -1 for none), the end of the last stale
// one (Release, 0 for none), and when it saw that (StaleAt).
type AdvanceHold struct {
	Topic     string
	Seq       int
	Partition int32
	Scanned   int64
	MovedIn   int64
	Release   int64 `json:",omitempty"`
	StaleAt   int64 `json:",omitempty"`
}

// RecordDelivered reports Growth.Delivered of an old partition for the
// release it was found below; a report for another release is stale.
type RecordDelivered struct {
	Topic     string
	Seq       int
	Partition int32
	Release   int64
	Offset    int64
}

// NoteGroups records groups whose members, as their coordinator sees
// them, subscribe to a topic with a growth in progress (Growth.Joined).
type NoteGroups struct {
	Topic  string
	Seq    int
	Groups []string
	At     int64
}

// LiftGrowth ends a growth's hold, for Reason (growth.Drained or
// growth.Bound).
type LiftGrowth struct {
	Topic  string
	Seq    int
	Reason string
	At     int64
}

// Topic configs of ordered growth.
const (
	ConfigGrowthOrdered     = "raftka.growth.ordered"
	ConfigGrowthQuietMs     = "raftka.growth.quiet.ms"
	ConfigGrowthMaxHoldMs   = "raftka.growth.max.hold.ms"
	ConfigGrowthGroupWindow = "raftka.growth.group.window.ms"
	ConfigGrowthPartitioner = "raftka.growth.partitioner"
)

// Rule is the growth as the pure rules of package growth read it: its
// releases lowered to what the partitions' leaders found delivered.
func (g Growth) Rule() growth.Growth {
	r := g.holdRule()
	r.Splits, r.Releases = g.Splits, g.Releases
	if g.Delivered != nil {
		r.Releases = slices.Clone(g.Releases)
		for p, end := range g.Delivered {
			if end >= 0 {
				r.Releases[p] = min(r.Releases[p], end)
			}
		}
	}
	if g.LastStaleAt != 0 {
		r.LastStale = time.UnixMilli(g.LastStaleAt)
	}
	return r
}

// holdRule is as much of Rule as growth.Hold reads. Every consumer fetch
// of a growing topic asks for it, so it copies nothing.
func (g Growth) holdRule() growth.Growth {
	r := growth.Growth{Seq: g.Seq, From: g.From, To: g.To, Holds: g.Holds}
	if g.VisibleAt != 0 {
		r.Visible = time.UnixMilli(g.VisibleAt)
	}
	return r
}

// Hidden reports whether some old partition has not reported its split.
func (g Growth) Hidden() bool { return g.VisibleAt == 0 }

// GrowthSettings are the topic's ordered-growth configs.
func (t *Topic) GrowthSettings() growth.Settings {
	return growth.Settings{
		Quiet:   time.Duration(t.Int(ConfigGrowthQuietMs)) * time.Millisecond,
		MaxHold: time.Duration(t.Int(ConfigGrowthMaxHoldMs)) * time.Millisecond,
	}
}

// GrowthPartitioner is the hash the topic's producers place keys by.
func (t *Topic) GrowthPartitioner() growth.Partitioner {
	return growth.Partitioner(t.Value(ConfigGrowthPartitioner))
}

// OrderedGrowth reports whether a growth of the topic is ordered.
func (t *Topic) OrderedGrowth() bool { return t.Value(ConfigGrowthOrdered) == "true" }

// VisiblePartitions is how many partitions clients are shown: the count
// before the earliest growth still hidden, else all.
func (t *Topic) VisiblePartitions() int32 {
	for _, g := range t.Growths {
		if g.Hidden() {
			return g.From
		}
	}
	return int32(len(t.Partitions))
}

// HeldGrowth is the sequence number of the latest growth that is
// visible and still held, 0 for none.
func (t *Topic) HeldGrowth() int {
	seq := 0
	for _, g := range t.Growths {
		if !g.Hidden() {
			seq = g.Seq
		}
	}
	return seq
}

// Hold is where consumers of partition index are held back, the lowest
// hold of the visible growths still held, or false if none holds it.
// Holds of stacked growths only rise, so the lowest is the earliest's.
func (t *Topic) Hold(index int32) (int64, bool) {
	hold, held := int64(0), false
	for _, g := range t.Growths {
		if h, ok := growth.Hold(g.holdRule(), index); ok && (!held || h < hold) {
			hold, held = h, true
		}
	}
	return hold, held
}

// startGrowth records the growth that a CreatePartitions of cp just made,
// from `from` partitions: hidden until every old partition's split is in.
func (s *State) startGrowth(t *Topic, from int32, cp *CreatePartitions) {
	t.GrowthSeq++
	unset := func() []int64 { return slices.Repeat([]int64{-1}, int(from)) }
	g := Growth{Seq: t.GrowthSeq, From: from, To: int32(len(t.Partitions)), ProposedAt: cp.At,
		Splits: unset(), Holds: unset(), Scanned: unset(), Releases: unset(), Blocked: make([]bool, from)}
	for i := from; i < g.To; i++ {
		t.Partitions[i].Growth = g.Seq
	}
	t.Growths = append(t.Growths, g)
}

// growthOf finds the growth seq of topic and checks that partition is one
// of its old partitions.
func (s *State) growthOf(topic string, seq int, partition int32) (*Topic, *Growth, error) {
	t := s.topics[topic]
	if t == nil {
		return nil, nil, kerr.UnknownTopicOrPartition
	}
	i := slices.IndexFunc(t.Growths, func(g Growth) bool { return g.Seq == seq })
	if i < 0 || partition < 0 || partition >= t.Growths[i].From {
		return nil, nil, kerr.InvalidRequest
	}
	return t, &t.Growths[i], nil
}

func (s *State) recordSplit(c *RecordSplit) Outcome {
	t, g, err := s.growthOf(c.Topic, c.Seq, c.Partition)
	if err != nil {
		return Outcome{Err: err}
	}
	p := c.Partition
	if g.Splits[p] >= 0 {
		return Outcome{Topic: t} // the first report stands: a later leader's reads later
	}
	g.Splits[p], g.Holds[p], g.Scanned[p], g.Releases[p] = c.Offset, c.Offset, c.Offset, c.Offset
	if !slices.Contains(g.Splits, -1) {
		g.VisibleAt = max(c.At, 1)
	}
	return Outcome{Topic: t}
}

// advanceHold records what a leader classified. Its reports only move
// forward, so a report a new leader repeats changes nothing.
func (s *State) advanceHold(c *AdvanceHold) Outcome {
	t, g, err := s.growthOf(c.Topic, c.Seq, c.Partition)
	if err != nil {
		return Outcome{Err: err}
	}
	p := c.Partition
	if g.Splits[p] < 0 || c.Scanned < g.Scanned[p] {
		return Outcome{Err: kerr.InvalidRequest}
	}
	if !g.Blocked[p] {
		if c.MovedIn >= 0 {
			g.Holds[p], g.Blocked[p] = max(g.Holds[p], c.MovedIn), true
		} else {
			g.Holds[p] = max(g.Holds[p], c.Scanned)
		}
	}
	g.Scanned[p] = c.Scanned
	if c.Release > g.Releases[p] {
		g.Releases[p] = c.Release
		if g.Delivered != nil {
			g.Delivered[p] = -1 // found for the release before
		}
	}
	g.LastStaleAt = max(g.LastStaleAt, c.StaleAt)
	return Outcome{Topic: t}
}

// DeliveredOf is partition p's Growth.Delivered, -1 while unknown.
func (g Growth) DeliveredOf(p int32) int64 {
	if int(p) >= len(g.Delivered) {
		return -1
	}
	return g.Delivered[p]
}

// recordDelivered takes a leader's report if it is for the partition's
// current release; the first report for a release stands.
func (s *State) recordDelivered(c *RecordDelivered) Outcome {
	t, g, err := s.growthOf(c.Topic, c.Seq, c.Partition)
	if err != nil {
		return Outcome{Err: err}
	}
	p := c.Partition
	if g.Splits[p] < 0 || c.Release != g.Releases[p] || c.Offset < 0 || c.Offset > c.Release {
		return Outcome{Err: kerr.InvalidRequest}
	}
	if g.Delivered == nil {
		g.Delivered = slices.Repeat([]int64{-1}, int(g.From))
	}
	if g.Delivered[p] < 0 {
		g.Delivered[p] = c.Offset
	}
	return Outcome{Topic: t}
}

// noteGroups records the groups not noted yet; the first note of a group
// stands.
func (s *State) noteGroups(c *NoteGroups) Outcome {
	t, g, err := s.growthOf(c.Topic, c.Seq, 0)
	if err != nil {
		return Outcome{Err: err}
	}
	for _, group := range c.Groups {
		if _, ok := g.Joined[group]; ok {
			continue
		}
		if g.Joined == nil {
			g.Joined = map[string]int64{}
		}
		g.Joined[group] = c.At
	}
	return Outcome{Topic: t}
}

// liftGrowth lifts the earliest growth of the topic, only: stacked
// growths lift in order.
func (s *State) liftGrowth(c *LiftGrowth) Outcome {
	t := s.topics[c.Topic]
	if t == nil {
		return Outcome{Err: kerr.UnknownTopicOrPartition}
	}
	if len(t.Growths) == 0 || t.Growths[0].Seq != c.Seq || t.Growths[0].Hidden() {
		return Outcome{Err: kerr.InvalidRequest}
	}
	g := t.Growths[0]
	t.Growths = slices.Delete(t.Growths, 0, 1)
	t.LastLift = &GrowthLift{Seq: g.Seq, Reason: c.Reason, At: c.At, HeldMs: max(c.At-g.VisibleAt, 0)}
	if c.Reason == string(growth.Bound) {
		t.ForcedLifts++
	}
	return Outcome{Topic: t}
}
