package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produce sends each line of stdin as a record and waits for every
// acknowledgement; the first refusal is the command's error. With
// --numbered each record carries its producer's name and its sequence in
// its partition (numbering), for raftka verify.
func produce(fs *pflag.FlagSet) runFunc {
	keySep := fs.StringP("key-separator", "k", "", "split each line at the first S into key and value")
	acks := fs.String("acks", "all", "all, leader or none")
	var headers []string
	fs.StringArrayVarP(&headers, "header", "H", nil, "a header of every record, key=value (repeat for more, the same key too: all are kept, in order)")
	numbered := fs.Bool("numbered", false, "write numbered records that raftka verify checks for loss and duplicates, one per line of stdin")
	producerName := fs.String("producer", "", "with --numbered, the name that numbers this producer's records apart from others'")
	timeout := fs.Duration("timeout", 30*time.Second, "give up on a record not acknowledged within this, as Kafka's delivery.timeout.ms; 0 waits for ever")
	partition := fs.Int32P("partition", "p", -1, "write every record to this partition; -1 places them by key (murmur2, as Kafka's clients do)")
	tombstone := fs.BoolP("tombstone", "Z", false, "produce an empty value as null: a tombstone, which compaction deletes the key for")
	compression := fs.String("compression", "none", "none, gzip, snappy, lz4 or zstd")
	return func(ctx context.Context, e *env, topics []string) error {
		if len(topics) != 1 {
			return usagef("name one topic")
		}
		// Every header given, in order: Kafka allows a key more than once.
		var hdrs []kgo.RecordHeader
		for _, h := range headers {
			k, v, ok := strings.Cut(h, "=")
			if !ok || k == "" {
				return usagef("--header %q: want key=value", h)
			}
			hdrs = append(hdrs, kgo.RecordHeader{Key: k, Value: []byte(v)})
		}
		opts := []kgo.Opt{kgo.DefaultProduceTopic(topics[0])}
		switch *acks {
		case "all", "-1":
			opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		case "leader", "1":
			opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		case "none", "0":
			opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
		default:
			return usagef("--acks %s: want all, leader or none", *acks)
		}
		codecs := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
			"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
		codec, ok := codecs[*compression]
		if !ok {
			return usagef("--compression %s: want none, gzip, snappy, lz4 or zstd", *compression)
		}
		opts = append(opts, kgo.ProducerBatchCompression(codec))
		if *numbered && *partition >= 0 {
			return usagef("--numbered places its records itself: it takes no --partition")
		}
		if *numbered || *partition >= 0 {
			opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		}
		if *timeout < 0 {
			return usagef("--timeout %v: want a duration, or 0 for none", *timeout)
		}
		watch := &refusals{out: e.errOut, topic: topics[0], timeout: *timeout, seen: map[int32]string{}}
		opts = append(opts, kgo.WithLogger(watch))
		if *timeout > 0 {
			opts = append(opts, kgo.RecordDeliveryTimeout(*timeout))
		}
		cl, err := e.client(ctx, opts...)
		if err != nil {
			return err
		}
		defer cl.Close()
		var numbers *numbering
		if *numbered {
			detail, err := describeTopic(ctx, kadm.NewClient(cl), topics[0])
			if err != nil {
				return err
			}
			if *producerName == "" {
				*producerName = "raftka-" + randomName()
			}
			numbers = newNumbering(*producerName, int32(len(detail.partitions)))
		}
		var (
			mu       sync.Mutex
			firstErr error
			acked    int
		)
		lines := bufio.NewScanner(e.in)
		lines.Buffer(make([]byte, 64<<10), 16<<20)
		sent := 0
		for lines.Scan() {
			r := &kgo.Record{Value: []byte(lines.Text())}
			if *keySep != "" {
				if k, v, ok := strings.Cut(lines.Text(), *keySep); ok {
					r.Key, r.Value = []byte(k), []byte(v)
				}
			}
			r.Headers = slices.Clone(hdrs)
			if *tombstone && len(r.Value) == 0 {
				r.Value = nil
			}
			r.Partition = *partition
			if numbers != nil {
				numbers.stamp(r)
			}
			sent++
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				} else if err == nil {
					acked++
				}
			})
		}
		if err := lines.Err(); err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil {
			if last := watch.last(); errors.Is(firstErr, kgo.ErrRecordTimeout) && last != "" {
				return fmt.Errorf("%d of %d records acknowledged; gave up after --timeout %v: %w (the brokers last said: %s)", acked, sent, *timeout, firstErr, last)
			}
			return fmt.Errorf("%d of %d records acknowledged; the first refusal: %w", acked, sent, firstErr)
		}
		if e.json {
			view := map[string]any{"topic": topics[0], "produced": acked}
			if numbers != nil {
				view["producer"] = numbers.producer
			}
			return printJSON(e.out, view)
		}
		_, _ = fmt.Fprintf(e.out, "produced %d records to %s\n", acked, topics[0])
		if numbers != nil {
			_, _ = fmt.Fprintf(e.out, "numbered as producer %s (raftka verify %s checks them)\n", numbers.producer, topics[0])
		}
		return nil
	}
}

// refusals is the producer's logger: it reports on stderr, as it happens,
// each refusal the brokers answer a batch with that the client retries
// silently until the timeout (NOT_ENOUGH_REPLICAS while too few replicas
// are in sync, say), once per partition until the refusal changes.
// franz-go tells of them only in its debug line of each produce response,
// "topic[partition{retrying@offset,records(ERROR: message)}, ...]", which
// is read here; the topic is the one produce writes to.
type refusals struct {
	out     io.Writer
	topic   string
	timeout time.Duration
	mu      sync.Mutex
	seen    map[int32]string // partition -> the last refusal reported
	lastErr string
}

var retried = regexp.MustCompile(`(\d+)\{retrying@-?\d+,\d+\(([^}]*)\)\}`)

func (r *refusals) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (r *refusals) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	if msg != "produced" {
		return
	}
	for i := 0; i+1 < len(keyvals); i += 2 {
		if keyvals[i] == "to" {
			r.note(fmt.Sprint(keyvals[i+1]))
		}
	}
}

func (r *refusals) note(update string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range retried.FindAllStringSubmatch(update, -1) {
		partition, err := strconv.ParseInt(m[1], 10, 32)
		if err != nil {
			continue
		}
		refusal := strings.TrimSuffix(m[2], ".")
		r.lastErr = refusal
		if r.seen[int32(partition)] == refusal {
			continue
		}
		r.seen[int32(partition)] = refusal
		until := "until it is acknowledged (--timeout 0)"
		if r.timeout > 0 {
			until = fmt.Sprintf("for up to --timeout %v", r.timeout)
		}
		_, _ = fmt.Fprintf(r.out, "raftka produce: %s[%d] refused: %s; retrying %s\n", r.topic, partition, refusal, until)
	}
}

func (r *refusals) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}
