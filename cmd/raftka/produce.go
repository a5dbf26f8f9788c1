package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"sync"

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
	fs.StringArrayVarP(&headers, "header", "H", nil, "a header of every record, key=value (repeat for more)")
	numbered := fs.Bool("numbered", false, "write numbered records that raftka verify checks for loss and duplicates, one per line of stdin")
	producerName := fs.String("producer", "", "with --numbered, the name that numbers this producer's records apart from others'")
	return func(ctx context.Context, e *env, topics []string) error {
		if len(topics) != 1 {
			return usagef("name one topic")
		}
		hdrs, err := keyValues(headers)
		if err != nil {
			return err
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
		if *numbered {
			opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
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
			for k, v := range hdrs {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
			}
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
