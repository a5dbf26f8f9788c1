package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumed is a record as consume --format json (or -o json) prints it,
// one per line. A key or value that is not UTF-8 is base64, and its
// encoding says so; a null value (a tombstone) is null.
type consumed struct {
	Topic         string         `json:"topic"`
	Partition     int32          `json:"partition"`
	Offset        int64          `json:"offset"`
	Timestamp     time.Time      `json:"timestamp"`
	Key           *string        `json:"key"`
	KeyEncoding   string         `json:"keyEncoding,omitempty"`
	Value         *string        `json:"value"`
	ValueEncoding string         `json:"valueEncoding,omitempty"`
	Headers       []headerOfJSON `json:"headers,omitempty"`
}

// headerOfJSON is one header, in the record's order: a key may repeat.
type headerOfJSON struct {
	Key           string  `json:"key"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"valueEncoding,omitempty"`
}

// jsonBytes is b as JSON shows it: text if it is UTF-8, else base64 with
// the encoding named; nil stays null.
func jsonBytes(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, "base64"
}

// consume prints a topic's records: values, one per line, or JSON lines.
// With a group it resumes from the group's committed offsets and commits
// what it printed; with --exit it stops at the end the partitions had
// when it started.
func consume(fs *pflag.FlagSet) runFunc {
	from := fs.String("from", "start", "where to start: "+positionForms)
	fs.StringVar(from, "offset", "start", "the same as --from (rpk's name)")
	count := fs.IntP("count", "n", 0, "stop after N records; 0 is no limit")
	group := fs.StringP("group", "g", "", "consume as a member of this consumer group, committing offsets; runs until Ctrl-C")
	var partitions []int32
	fs.Int32SliceVarP(&partitions, "partition", "p", nil, "only these partitions (comma-separated or repeated); not with --group")
	format := fs.StringP("format", "f", "text", "text (each value on a line), json (every field, one record a line; -o json gives the same), "+
		"or a template: %t topic, %p partition, %o offset, %k key, %v value, %T timestamp (ms), %h headers, %% a percent sign, \\n and \\t")
	exit := fs.BoolP("exit", "e", false, "stop at the end of each partition as it was at the start")
	return func(ctx context.Context, e *env, topics []string) error {
		if e.json {
			*format = "json"
		}
		printOne, err := recordPrinter(e, *format)
		if err != nil {
			return err
		}
		if *group != "" && len(partitions) > 0 {
			return usagef("--partition and --group: a group's members are given their partitions")
		}
		topic := topics[0]
		start, err := parsePosition("--from", *from)
		if err != nil {
			return err
		}
		opts := []kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(start.kgoOffset())}
		if len(partitions) > 0 {
			chosen := map[int32]kgo.Offset{}
			for _, p := range partitions {
				chosen[p] = start.kgoOffset()
			}
			opts = []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: chosen})}
		}
		if *group != "" {
			opts = append(opts, kgo.ConsumerGroup(*group), kgo.DisableAutoCommit())
			opts = append(opts, groupProgress(e.errOut, *group)...)
		}
		cl, err := e.client(ctx, opts...)
		if err != nil {
			return err
		}
		defer cl.Close()
		// A topic that is not there would leave the client waiting for
		// it, silently: say so at once, as Kafka's tools do.
		if _, err := describeTopic(ctx, kadm.NewClient(cl), topic); err != nil {
			return err
		}
		if *group != "" {
			_, _ = fmt.Fprintf(e.errOut, "raftka consume: joining group %s on %s; it commits what it prints, and runs until Ctrl-C\n", *group, topic)
		}
		var left map[int32]int64 // per partition, the offset to reach with --exit
		if *exit {
			if left, err = endsToReach(ctx, kadm.NewClient(cl), topic, *group, start); err != nil {
				return err
			}
			if len(partitions) > 0 {
				maps.DeleteFunc(left, func(p int32, _ int64) bool { return !slices.Contains(partitions, p) })
			}
		}
		return consumeUntil(ctx, cl, printOne, *count, left, *group)
	}
}

// consumeUntil prints records until count of them (0: no limit), or until
// every partition of left reached its offset (left nil: no end), and
// commits them for group.
func consumeUntil(ctx context.Context, cl *kgo.Client, print func(*kgo.Record) error, count int, left map[int32]int64, group string) error {
	printed := 0
	for (count == 0 || printed < count) && (left == nil || len(left) > 0) {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil // interrupted: what was printed stands
		}
		if err := fetches.Err(); err != nil {
			return err
		}
		var done []*kgo.Record
		for _, r := range fetches.Records() {
			if count > 0 && printed >= count {
				break
			}
			if err := print(r); err != nil {
				return err
			}
			printed++
			done = append(done, r)
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		}
		if group != "" && len(done) > 0 {
			if err := cl.CommitRecords(ctx, done...); err != nil {
				return fmt.Errorf("commit group %s's offsets: %w", group, err)
			}
		}
	}
	return nil
}

// groupProgress are the client options that report on stderr what a
// group member is doing: its partitions as the group assigns and takes
// them.
func groupProgress(w io.Writer, group string) []kgo.Opt {
	say := func(what string, partitions map[string][]int32) {
		for topic, ps := range partitions {
			slices.Sort(ps)
			_, _ = fmt.Fprintf(w, "raftka consume: group %s %s %s partitions %s\n", group, what, topic, joinNumbers(ps))
		}
	}
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { say("assigned", p) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { say("revoked", p) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { say("lost", p) }),
	}
}

// endsToReach gives, for each partition with records left to read from
// where the consumer starts (the group's committed offset, else start),
// the end offset it had now.
func endsToReach(ctx context.Context, adm *kadm.Client, topic, group string, start position) (map[int32]int64, error) {
	ends, err := listSettled(ctx, func() (kadm.ListedOffsets, error) { return adm.ListEndOffsets(ctx, topic) })
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

// recordPrinter prints records as format says: text, json, or a template.
func recordPrinter(e *env, format string) (func(*kgo.Record) error, error) {
	switch {
	case format == "text":
		return func(r *kgo.Record) error {
			_, err := fmt.Fprintf(e.out, "%s\n", r.Value)
			return err
		}, nil
	case format == "json":
		return func(r *kgo.Record) error { return printJSONLine(e, recordOfJSON(r)) }, nil
	case !strings.Contains(format, "%"):
		return nil, usagef("--format %s: want text, json, or a template with %%v, %%k, ... in it", format)
	}
	template := strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace(format)
	return func(r *kgo.Record) error {
		_, err := io.WriteString(e.out, expand(template, r))
		return err
	}, nil
}

// expand fills a --format template with r's fields, as kcat's -f does.
func expand(template string, r *kgo.Record) string {
	var b strings.Builder
	for i := 0; i < len(template); i++ {
		if template[i] != '%' || i+1 == len(template) {
			b.WriteByte(template[i])
			continue
		}
		i++
		switch template[i] {
		case 't':
			b.WriteString(r.Topic)
		case 'p':
			b.WriteString(strconv.Itoa(int(r.Partition)))
		case 'o':
			b.WriteString(strconv.FormatInt(r.Offset, 10))
		case 'k':
			b.Write(r.Key)
		case 'v':
			b.Write(r.Value)
		case 'T':
			b.WriteString(strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
		case 'h':
			for j, h := range r.Headers {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(h.Key + "=" + string(h.Value))
			}
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(template[i])
		}
	}
	return b.String()
}

// recordOfJSON is r as consume's JSON shows it.
func recordOfJSON(r *kgo.Record) consumed {
	c := consumed{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp}
	c.Key, c.KeyEncoding = jsonBytes(r.Key)
	c.Value, c.ValueEncoding = jsonBytes(r.Value)
	for _, h := range r.Headers {
		v, enc := jsonBytes(h.Value)
		c.Headers = append(c.Headers, headerOfJSON{Key: h.Key, Value: v, ValueEncoding: enc})
	}
	return c
}
