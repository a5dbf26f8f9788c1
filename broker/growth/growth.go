package growth

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Growth is one growth of a topic from From to To partitions, as the
// metadata records it.
type Growth struct {
	Seq      int
	From, To int32
	// Visible is when the last old partition reported its split and
	// clients were shown To partitions; zero while the growth is hidden.
	Visible time.Time
	// Splits are the old partitions' split offsets, by index; -1 until
	// the partition's leader reported it.
	Splits []int64
	// Releases are the offsets the counted groups must reach on each old
	// partition: its split, raised past every stale record (Stale).
	Releases []int64
	// LastStale is when the last stale record was taken; zero for none.
	LastStale time.Time
}

// Settings are a topic's ordered-growth configs.
type Settings struct {
	// Quiet is how long no stale record may have arrived before the hold
	// lifts: the producers still on the old count have refreshed.
	Quiet time.Duration
	// MaxHold bounds a hold, so a group that stopped committing cannot
	// hold the topic for ever.
	MaxHold time.Duration
}

// Reason is why a hold lifts, or NotYet.
type Reason string

const (
	NotYet  Reason = ""
	Drained Reason = "drained" // every counted group passed every release
	Bound   Reason = "bound"   // MaxHold passed first
)

// Commits are the counted groups' committed offsets on the topic: group,
// then partition index. A partition absent has no commit.
type Commits map[string]map[int32]int64

// Decide says whether the growth's hold lifts at now.
func Decide(now time.Time, g Growth, s Settings, counted Commits) Reason {
	if g.Visible.IsZero() {
		return NotYet // hidden: consumers see no new partition, nothing is held
	}
	if now.Sub(g.Visible) >= s.MaxHold {
		return Bound
	}
	for _, offsets := range counted {
		for p, release := range g.Releases {
			committed, ok := offsets[int32(p)]
			if release > 0 && (!ok || committed < release) {
				return NotYet
			}
		}
	}
	quietFrom := g.Visible
	if g.LastStale.After(quietFrom) {
		quietFrom = g.LastStale
	}
	if now.Sub(quietFrom) < s.Quiet {
		return NotYet
	}
	return Drained
}

// Hold is the offset below which consumers may read partition while the
// growth is held: an old partition's split, the start of a new one. It is
// false for a hidden growth, and for a partition the growth did not
// concern.
func Hold(g Growth, partition int32) (int64, bool) {
	switch {
	case g.Visible.IsZero() || partition < 0 || partition >= g.To:
		return 0, false
	case partition >= g.From:
		return 0, true
	default:
		return g.Splits[partition], true
	}
}

// murmur2 is the default partitioner of the Java client, franz-go and
// KafkaJS, through kgo's hasher rather than one of our own.
var murmur2 = kgo.StickyKeyPartitioner(nil).ForTopic("")

// Stale tells whether a record with key, taken into old partition while a
// growth to `to` partitions is held, was placed by a producer that still
// counted the old partitions: the default partitioner puts its key
// elsewhere now. Records without a key have no order to keep.
func Stale(key []byte, partition, to int32) bool {
	if key == nil {
		return false
	}
	return int32(murmur2.Partition(&kgo.Record{Key: key}, int(to))) != partition
}
