package growth

import (
	"hash/crc32"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestDecide(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	s := Settings{Quiet: 5 * time.Second, MaxHold: 5 * time.Minute}
	visible := Growth{Seq: 1, From: 2, To: 3, Visible: t0, Splits: []int64{100, 40}, Releases: []int64{100, 55}}
	stale := visible
	stale.LastStale = t0.Add(20 * time.Second)
	empty := visible
	empty.Splits, empty.Releases = []int64{0, 0}, []int64{0, 0}
	hidden := visible
	hidden.Visible = time.Time{}
	past := Commits{"a": {0: 100, 1: 55}, "b": {0: 120, 1: 60}}
	for _, tc := range []struct {
		name    string
		now     time.Time
		g       Growth
		commits Commits
		want    Reason
	}{
		{"hidden growths hold nothing, however old", t0.Add(time.Hour), hidden, nil, NotYet},
		{"no counted group, quiet passed", t0.Add(s.Quiet), visible, nil, Drained},
		{"no counted group, not quiet yet", t0.Add(time.Second), visible, nil, NotYet},
		{"every group at or past every release", t0.Add(time.Minute), visible, past, Drained},
		{"one group short on one partition", t0.Add(time.Minute), visible, Commits{"a": {0: 100, 1: 55}, "b": {0: 120, 1: 54}}, NotYet},
		{"a group with no commit on a partition with records", t0.Add(time.Minute), visible, Commits{"a": {0: 100}}, NotYet},
		{"a group with no commit where there was nothing to read", t0.Add(time.Minute), empty, Commits{"a": {}}, Drained},
		{"a stale record restarts the quiet", t0.Add(22 * time.Second), stale, past, NotYet},
		{"quiet after the last stale record", t0.Add(25 * time.Second), stale, past, Drained},
		{"the bound lifts a hold a group never drains", t0.Add(s.MaxHold), visible, Commits{"stuck": {0: 3}}, Bound},
		{"just before the bound", t0.Add(s.MaxHold - time.Millisecond), visible, Commits{"stuck": {0: 3}}, NotYet},
	} {
		if got := Decide(tc.now, tc.g, s, tc.commits); got != tc.want {
			t.Errorf("%s: Decide = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestHold(t *testing.T) {
	g := Growth{From: 2, To: 4, Visible: time.Unix(1, 0), Splits: []int64{90, 40}, Holds: []int64{100, 40}}
	for _, tc := range []struct {
		partition int32
		want      int64
		held      bool
	}{{0, 100, true}, {1, 40, true}, {2, 0, true}, {3, 0, true}, {4, 0, false}, {-1, 0, false}} {
		if got, held := Hold(g, tc.partition); got != tc.want || held != tc.held {
			t.Errorf("Hold(%d) = %d, %v; want %d, %v", tc.partition, got, held, tc.want, tc.held)
		}
	}
	g.Visible = time.Time{}
	if _, held := Hold(g, 0); held {
		t.Error("a hidden growth holds partition 0")
	}
}

// references place a key among n partitions as each client does,
// independently of Place: kgo's default (murmur2, as the Java client's),
// librdkafka's rd_crc32(key) % partition_cnt, and sarama's own hash
// partitioner.
var references = map[Partitioner]func(key []byte, n int32) int32{
	Murmur2: func(key []byte, n int32) int32 {
		return int32(kgo.StickyKeyPartitioner(nil).ForTopic("orders").Partition(&kgo.Record{Key: key}, int(n)))
	},
	CRC32: func(key []byte, n int32) int32 { return int32(crc32.ChecksumIEEE(key) % uint32(n)) },
	FNV1a: func(key []byte, n int32) int32 {
		p, err := sarama.NewHashPartitioner("orders").Partition(&sarama.ProducerMessage{Key: sarama.ByteEncoder(key)}, n)
		if err != nil {
			panic(err)
		}
		return p
	},
}

// TestClassify checks Classify, for each partitioner, against what the
// client does to the same keys before and after a growth from 4 to 6
// partitions: a key written where 4 place it and 6 do not is stale; one
// written where 6 place it and 4 do not moved in; a key both counts place
// alike is neutral.
func TestClassify(t *testing.T) {
	for p, reference := range references {
		moved, stayed := 0, 0
		for i := range 1000 {
			key := []byte("customer-" + strconv.Itoa(i))
			old, now := reference(key, 4), reference(key, 6)
			switch now {
			case old:
				stayed++
				if got := Classify(p, key, old, 4, 6); got != Neutral {
					t.Fatalf("%s: key %s in partition %d under both counts: %v", p, key, old, got)
				}
			default:
				moved++
				if got := Classify(p, key, old, 4, 6); got != Stale {
					t.Fatalf("%s: key %s written to %d of 4, now %d of 6: %v, want Stale", p, key, old, now, got)
				}
				if got := Classify(p, key, now, 4, 6); now < 4 && got != MovedIn {
					t.Fatalf("%s: key %s written to %d of 6, was %d of 4: %v, want MovedIn", p, key, now, old, got)
				}
			}
			for q := int32(0); q < 4; q++ {
				if q != old && q != now && Classify(p, key, q, 4, 6) != Neutral {
					t.Fatalf("%s: key %s in %d, placed there by neither count, is not neutral", p, key, q)
				}
			}
		}
		if moved == 0 || stayed == 0 {
			t.Fatalf("%s: keys moved %d, stayed %d: the test needs both", p, moved, stayed)
		}
		if Classify(p, nil, 0, 4, 6) != Neutral {
			t.Errorf("%s: a record without a key is not neutral", p)
		}
	}
	if Classify(CRC32, []byte{}, 0, 4, 6) != Neutral {
		t.Error("librdkafka places an empty key at random, yet it is not neutral")
	}
}

// TestPartitionersDiffer: a topic whose producers use another hash than
// the one configured is misread, so each name must matter.
func TestPartitionersDiffer(t *testing.T) {
	for p := range references {
		for q := range references {
			same := 0
			for i := range 100 {
				key := []byte("k" + strconv.Itoa(i))
				a, _ := Place(p, key, 12)
				b, _ := Place(q, key, 12)
				if a == b {
					same++
				}
			}
			if p != q && same > 30 {
				t.Errorf("%s and %s place %d of 100 keys alike among 12", p, q, same)
			}
		}
	}
}
