package growth

import (
	"hash/crc32"
	"hash/fnv"
	"slices"
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
	// Holds are where consumers of each old partition are held: the first
	// record that moved in from another old partition (MovedIn), once one
	// came; until then, how far the partition's leader classified.
	Holds []int64
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
	if len(Draining(g, counted)) > 0 {
		return NotYet
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

// Draining names the counted groups, sorted, that have not committed at
// or past the release on every old partition that has records to read.
func Draining(g Growth, counted Commits) []string {
	var out []string
	for group, offsets := range counted {
		for p, release := range g.Releases {
			committed, ok := offsets[int32(p)]
			if release > 0 && (!ok || committed < release) {
				out = append(out, group)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// Hold is the offset below which consumers may read partition while the
// growth is held: an old partition's hold (Holds), the start of a new one.
// It is false for a hidden growth, and for a partition the growth did not
// concern.
func Hold(g Growth, partition int32) (int64, bool) {
	switch {
	case g.Visible.IsZero() || partition < 0 || partition >= g.To:
		return 0, false
	case partition >= g.From:
		return 0, true
	default:
		return g.Holds[partition], true
	}
}

// Partitioner names the hash a topic's producers place keys by, as the
// topic config raftka.growth.partitioner says.
type Partitioner string

const (
	// Murmur2: the Java client, franz-go, KafkaJS (v2's default),
	// kafka-python, and librdkafka's murmur2_random.
	Murmur2 Partitioner = "murmur2"
	// CRC32: librdkafka's default (consistent_random) and consistent, so
	// kcat, confluent-kafka-python, -go and -dotnet.
	CRC32 Partitioner = "crc32"
	// FNV1a: sarama's default hash partitioner.
	FNV1a Partitioner = "fnv1a"
)

// Partitioners are the names raftka.growth.partitioner takes.
var Partitioners = []string{string(Murmur2), string(CRC32), string(FNV1a)}

// placers place a key as each client does, through kgo's hashers rather
// than ones of our own: kgo documents each as matching that client.
var placers = map[Partitioner]kgo.TopicPartitioner{
	Murmur2: kgo.StickyKeyPartitioner(nil).ForTopic(""),
	CRC32:   kgo.StickyKeyPartitioner(kgo.SaramaHasher(crc32.ChecksumIEEE)).ForTopic(""),
	FNV1a:   kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(fnv32a)).ForTopic(""),
}

func fnv32a(b []byte) uint32 {
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32()
}

// Place is the partition of key among n by partitioner p (murmur2 for a
// name it does not know), and false for a key it places at random: none,
// or librdkafka's empty key.
func Place(p Partitioner, key []byte, n int32) (int32, bool) {
	if key == nil || (p == CRC32 && len(key) == 0) {
		return 0, false
	}
	placer, ok := placers[p]
	if !ok {
		placer = placers[Murmur2]
	}
	return int32(placer.Partition(&kgo.Record{Key: key}, int(n))), true
}

// Kind is what a record taken into an old partition during a growth says
// of its producer's partition count.
type Kind int

const (
	// Neutral: no key, or a key the default partitioner places in this
	// partition under both counts (or in neither: another partitioner).
	Neutral Kind = iota
	// Stale: placed by the old count; the key now belongs elsewhere. Its
	// producer has not refreshed yet, and the group must read it before
	// the key's records in its new partition.
	Stale
	// MovedIn: placed by the new count; the key belonged to another old
	// partition, whose records of it the group must read first.
	MovedIn
)

// Classify tells what a record with key, taken into old partition of a
// growth from `from` to `to` partitions by producers using p, is. Records
// the partitioner places at random have no order to keep.
func Classify(p Partitioner, key []byte, partition, from, to int32) Kind {
	before, ok := Place(p, key, from)
	if !ok {
		return Neutral
	}
	after, _ := Place(p, key, to)
	switch {
	case before == partition && after != partition:
		return Stale
	case after == partition && before != partition:
		return MovedIn
	}
	return Neutral
}
