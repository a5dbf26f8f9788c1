package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumed is a record as consume -format json prints it, one per line.
type consumed struct {
	Topic     string            `json:"topic"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Timestamp time.Time         `json:"timestamp"`
	Key       *string           `json:"key"`
	Value     string            `json:"value"`
	Headers   map[string]string `json:"headers,omitempty"`
}

// consume prints a topic's records: values, one per line, or JSON lines.
// With a group it resumes from the group's committed offsets and commits
// what it printed; with --exit it stops at the end the partitions had
// when it started.
func consume(fs *pflag.FlagSet) runFunc {
	from := fs.String("from", "start", "where to start: "+positionForms)
	count := fs.IntP("count", "n", 0, "stop after N records; 0 is no limit")
	group := fs.StringP("group", "g", "", "consume as a member of this consumer group, committing offsets; runs until Ctrl-C")
	format := fs.StringP("format", "f", "text", "text (key, value) or json (every field)")
	exit := fs.BoolP("exit", "e", false, "stop at the end of each partition as it was at the start")
	return func(ctx context.Context, e *env, topics []string) error {
		if len(topics) != 1 {
			return usagef("name one topic")
		}
		if *format != "text" && *format != "json" {
			return usagef("--format %s: want text or json", *format)
		}
		topic := topics[0]
		start, err := parsePosition("--from", *from)
		if err != nil {
			return err
		}
		opts := []kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(start.kgoOffset())}
		if *group != "" {
			opts = append(opts, kgo.ConsumerGroup(*group), kgo.DisableAutoCommit())
		}
		cl, err := e.client(ctx, opts...)
		if err != nil {
			return err
		}
		defer cl.Close()
		var left map[int32]int64 // per partition, the offset to reach with --exit
		if *exit {
			if left, err = endsToReach(ctx, kadm.NewClient(cl), topic, *group, start); err != nil {
				return err
			}
		}
		printed := 0
		for (*count == 0 || printed < *count) && (left == nil || len(left) > 0) {
			fetches := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return nil // interrupted: what was printed stands
			}
			if err := fetches.Err(); err != nil {
				return err
			}
			var done []*kgo.Record
			for _, r := range fetches.Records() {
				if *count > 0 && printed >= *count {
					break
				}
				if err := printRecord(e, r, *format); err != nil {
					return err
				}
				printed++
				done = append(done, r)
				if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
					delete(left, r.Partition)
				}
			}
			if *group != "" && len(done) > 0 {
				if err := cl.CommitRecords(ctx, done...); err != nil {
					return fmt.Errorf("commit group %s's offsets: %w", *group, err)
				}
			}
		}
		return nil
	}
}

// endsToReach gives, for each partition with records left to read from
// where the consumer starts (the group's committed offset, else start),
// the end offset it had now.
func endsToReach(ctx context.Context, adm *kadm.Client, topic, group string, start position) (map[int32]int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	starts, err := start.resolve(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	var committed kadm.OffsetResponses
	if group != "" {
		if committed, err = adm.FetchOffsets(ctx, group); err != nil {
			return nil, err
		}
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Topic != topic || o.Err != nil {
			return
		}
		begin, _ := starts.Lookup(topic, o.Partition)
		from := begin.Offset
		if c, ok := committed.Lookup(topic, o.Partition); ok && c.Err == nil && c.At >= 0 {
			from = c.At
		}
		if from < o.Offset {
			left[o.Partition] = o.Offset
		}
	})
	return left, nil
}

func printRecord(e *env, r *kgo.Record, format string) error {
	if format == "text" {
		_, err := fmt.Fprintf(e.out, "%s\n", r.Value)
		return err
	}
	c := consumed{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp, Value: string(r.Value)}
	if r.Key != nil {
		k := string(r.Key)
		c.Key = &k
	}
	for _, h := range r.Headers {
		if c.Headers == nil {
			c.Headers = map[string]string{}
		}
		c.Headers[h.Key] = string(h.Value)
	}
	return printJSONLine(e, c)
}
