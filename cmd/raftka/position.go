package main

import (
	"context"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// position is a place in every partition of a topic, as consume --from
// and group seek --to name it: the start, the end, an offset (capped at
// the end) or the first record at or after a time.
type position struct {
	kind   positionKind
	offset int64
	at     time.Time
}

type positionKind int

const (
	atStart positionKind = iota
	atEnd
	atOffset
	atTime
)

// parsePosition reads start, end, an offset or an RFC 3339 time; flag is
// the flag's name, for the error.
func parsePosition(flag, s string) (position, error) {
	switch s {
	case "start", "beginning", "earliest":
		return position{kind: atStart}, nil
	case "end", "latest":
		return position{kind: atEnd}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return position{kind: atOffset, offset: n}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return position{kind: atTime, at: t}, nil
	}
	return position{}, usagef("%s %s: want start, end, an offset or an RFC 3339 time", flag, s)
}

// kgoOffset is where a consumer without committed offsets starts.
func (p position) kgoOffset() kgo.Offset {
	switch p.kind {
	case atEnd:
		return kgo.NewOffset().AtEnd()
	case atOffset:
		return kgo.NewOffset().At(p.offset)
	case atTime:
		return kgo.NewOffset().AfterMilli(p.at.UnixMilli())
	default:
		return kgo.NewOffset().AtStart()
	}
}

// resolve gives the position's offset in each partition of the topics,
// as the brokers list them now.
func (p position) resolve(ctx context.Context, adm *kadm.Client, topics ...string) (kadm.ListedOffsets, error) {
	var listed kadm.ListedOffsets
	var err error
	switch p.kind {
	case atStart:
		listed, err = adm.ListStartOffsets(ctx, topics...)
	case atEnd:
		listed, err = adm.ListEndOffsets(ctx, topics...)
	case atOffset:
		if listed, err = adm.ListEndOffsets(ctx, topics...); err == nil {
			listed.Each(func(o kadm.ListedOffset) {
				o.Offset = min(p.offset, o.Offset)
				listed[o.Topic][o.Partition] = o
			})
		}
	case atTime:
		listed, err = adm.ListOffsetsAfterMilli(ctx, p.at.UnixMilli(), topics...)
	}
	if err != nil {
		return nil, err
	}
	return listed, listed.Error()
}
