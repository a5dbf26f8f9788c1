package main

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The record headers of numbered records, the convention raftka produce
// --numbered and raftka verify --produce write and raftka verify checks
// (README, "Detecting lost messages"): the producer's name, and the
// record's sequence number in its partition, from 0, in decimal.
const (
	headerProducer = "raftka.producer"
	headerSequence = "raftka.sequence"
)

// numbering numbers one producer's records per partition. It picks each
// record's partition itself, so that it knows whose count the record
// takes: round-robin, or for a keyed record by murmur2 of the key, as
// Kafka's clients place it, so that numbered records of a key land with
// the application's records of that key.
type numbering struct {
	producer   string
	partitions int32
	next       map[int32]int64
	turn       int32
	byKey      kgo.TopicPartitioner
}

func newNumbering(producer string, partitions int32) *numbering {
	return &numbering{producer: producer, partitions: partitions, next: map[int32]int64{},
		byKey: kgo.StickyKeyPartitioner(nil).ForTopic("")}
}

// stamp sets the record's partition and numbering headers and returns its
// sequence number.
func (n *numbering) stamp(r *kgo.Record) int64 {
	if r.Key != nil {
		r.Partition = int32(n.byKey.Partition(r, int(n.partitions)))
	} else {
		r.Partition = n.turn
		n.turn = (n.turn + 1) % n.partitions
	}
	seq := n.next[r.Partition]
	n.next[r.Partition] = seq + 1
	r.Headers = append(r.Headers,
		kgo.RecordHeader{Key: headerProducer, Value: []byte(n.producer)},
		kgo.RecordHeader{Key: headerSequence, Value: []byte(strconv.FormatInt(seq, 10))})
	return seq
}

// numberOf reads a record's numbering headers, if it has both.
func numberOf(headers []kmsg.Header) (producer string, seq int64, ok bool) {
	var haveProducer, haveSeq bool
	for _, h := range headers {
		switch h.Key {
		case headerProducer:
			producer, haveProducer = string(h.Value), true
		case headerSequence:
			n, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				return "", 0, false
			}
			seq, haveSeq = n, true
		}
	}
	return producer, seq, haveProducer && haveSeq
}
