package main

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// position is a place in every partition of a topic, as consume --from
// and group seek --to name it: the start, the end, an offset (capped at
// the end), N records before the end (down to the start), or the first
// record at or after a time.
type position struct {
	kind   positionKind
	offset int64 // atOffset: the offset; atFromEnd: N
	at     time.Time
}

type positionKind int

const (
	atStart positionKind = iota
	atEnd
	atOffset
	atFromEnd
	atTime
)

// positionForms names what parsePosition reads, for help and errors.
const positionForms = "start, end, an offset, -N (N records before the end), or a time: RFC 3339, or a duration before now (10m, 2h)"

// parsePosition reads one of positionForms; flag is the flag's name, for
// the error.
func parsePosition(flag, s string) (position, error) {
	switch s {
	case "start", "beginning", "earliest":
		return position{kind: atStart}, nil
	case "end", "latest":
		return position{kind: atEnd}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return position{kind: atFromEnd, offset: -n}, nil
		}
		return position{kind: atOffset, offset: n}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return position{kind: atTime, at: t}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return position{kind: atTime, at: time.Now().Add(-d)}, nil
	}
	return position{}, usagef("%s %s: want %s", flag, s, positionForms)
}

// kgoOffset is where a consumer without committed offsets starts.
func (p position) kgoOffset() kgo.Offset {
	switch p.kind {
	case atEnd:
		return kgo.NewOffset().AtEnd()
	case atOffset:
		return kgo.NewOffset().At(p.offset)
	case atFromEnd:
		return kgo.NewOffset().AtEnd().Relative(-p.offset)
	case atTime:
		return kgo.NewOffset().AfterMilli(p.at.UnixMilli())
	default:
		return kgo.NewOffset().AtStart()
	}
}

// resolve gives the position's offset in each partition of the topics,
// as the brokers list them now.
func (p position) resolve(ctx context.Context, adm *kadm.Client, topics ...string) (kadm.ListedOffsets, error) {
	switch p.kind {
	case atStart:
		return listSettled(ctx, func() (kadm.ListedOffsets, error) { return adm.ListStartOffsets(ctx, topics...) })
	case atTime:
		return listSettled(ctx, func() (kadm.ListedOffsets, error) { return adm.ListOffsetsAfterMilli(ctx, p.at.UnixMilli(), topics...) })
	}
	ends, err := listSettled(ctx, func() (kadm.ListedOffsets, error) { return adm.ListEndOffsets(ctx, topics...) })
	if err != nil || p.kind == atEnd {
		return ends, err
	}
	var starts kadm.ListedOffsets
	if p.kind == atFromEnd {
		if starts, err = listSettled(ctx, func() (kadm.ListedOffsets, error) { return adm.ListStartOffsets(ctx, topics...) }); err != nil {
			return nil, err
		}
	}
	ends.Each(func(o kadm.ListedOffset) {
		if p.kind == atOffset {
			o.Offset = min(p.offset, o.Offset) // capped at the end
		} else {
			first, _ := starts.Lookup(o.Topic, o.Partition)
			o.Offset = max(o.Offset-p.offset, first.Offset)
		}
		ends[o.Topic][o.Partition] = o
	})
	return ends, nil
}

// settleTime bounds how long a listing waits out a refusal that passes:
// a partition without a leader for a moment (a topic just made, an
// election).
const settleTime = 10 * time.Second

// listSettled runs list until it answers without a retriable error, for
// up to settleTime.
func listSettled(ctx context.Context, list func() (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
	deadline := time.Now().Add(settleTime)
	for {
		listed, err := list()
		if err == nil {
			err = listed.Error()
		}
		var code *kerr.Error
		if err == nil || !errors.As(err, &code) || !code.Retriable || time.Now().After(deadline) {
			return listed, err
		}
		select {
		case <-ctx.Done():
			return listed, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}
