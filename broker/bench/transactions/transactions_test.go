package transactions

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/benchreport"
)

var report benchreport.Table

func TestMain(m *testing.M) {
	report.SetColumns("measure", "without transactions", "with transactions", "ratio")
	benchreport.Main(m, &report, "transactions", "Transactions",
		"3 `raftka-broker` processes on 127.0.0.1, package `broker/bench/transactions`.", notes)
}

const notes = `### Reproduce

` + "```sh\nmake bench\n```" + `

- One topic of 6 partitions, replication factor 3; franz-go, acks=all, linger 0, 1 KiB
  incompressible records, compression off, 1,024 records buffered.
- Produce: idempotent against transactional in transactions of 1,000 records (begin, produce,
  flush, commit), RAFTKA_BENCH_TXN_SECONDS (6) each after 1 s of warm-up, three turns each,
  alternating; the rates are the turns' means. Committed records only count.
- Consume: what the produce turns wrote (half of it in transactions, so a marker per
  partition every 1,000 records), read from the start by a new client, read_uncommitted and
  read_committed alternating three times.
- Small rounds: 16, then 48, producers each write 10 records and wait for them, as a flush,
  or as a transaction (begin, produce, commit): how many transactions the coordinator, the
  metadata group's leader, takes (each is at least three metadata entries: its partitions,
  its end, its markers). A rate that grows with the producers is bound by the round trips
  of each transaction, not by the metadata group.
- Latency at one in flight: 500 rounds each of one idempotent record acknowledged, and of one
  transaction of one record (produce, then EndTxn, which returns once the commit is decided;
  the markers follow). The EndTxn row is its own share.`

func BenchmarkTransactions(b *testing.B) {
	c := brokertest.Start(b, brokertest.Options{Brokers: 3})
	c.CreateTopic("bench", 6, 3, nil)
	value := make([]byte, 1024)
	if _, err := rand.Read(value); err != nil {
		b.Fatal(err)
	}
	d := benchreport.Seconds("RAFTKA_BENCH_TXN_SECONDS", 6*time.Second)
	var plain, txn float64
	for turn := range 3 {
		plain += produceRate(b, c, value, "", d) / 3
		txn += produceRate(b, c, value, fmt.Sprintf("bench-txn-%d", turn), d) / 3
	}
	row("produce, records/s", plain, txn, benchreport.Thousands)

	var uncommitted, committed float64
	for range 3 {
		uncommitted += consumeRate(b, c, kgo.ReadUncommitted()) / 3
		committed += consumeRate(b, c, kgo.ReadCommitted()) / 3
	}
	row("consume from the start, records/s", uncommitted, committed, benchreport.Thousands)

	// 16 and 48 producers: whether transactions/s grows with them tells a
	// coordinator that is busy from one whose rounds wait.
	for _, producers := range []int{16, 48} {
		var batches, txns float64
		for turn := range 3 {
			batches += smallRate(b, c, producers, value, "", d) / 3
			txns += smallRate(b, c, producers, value, fmt.Sprintf("bench-small-%d-%d", producers, turn), d) / 3
		}
		row(fmt.Sprintf("%d producers, 10 records at a time: flushes/s, transactions/s", producers), batches, txns, benchreport.Thousands)
	}

	produce, whole, end := latencies(b, c, value)
	for _, q := range []struct {
		name string
		at   float64
	}{{"p50", 0.5}, {"p99", 0.99}} {
		ms := func(v float64) string { return fmt.Sprintf("%.2f ms", v) }
		row("one in flight, "+q.name+": a record / a transaction of one", quantile(produce, q.at), quantile(whole, q.at), ms)
		report.AddRow("one in flight, "+q.name+": EndTxn's share", "", ms(quantile(end, q.at)), "")
	}
}

// row adds a measure with and without transactions, and their ratio.
func row(name string, without, with float64, format func(float64) string) {
	report.AddRow(name, format(without), format(with), fmt.Sprintf("%.2fx", with/without))
}

// produceRate produces for d after a warm-up and returns the committed
// records per second: idempotent and without a pause with txnID empty,
// else in transactions of 1,000 records.
func produceRate(b *testing.B, c *brokertest.Cluster, value []byte, txnID string, d time.Duration) float64 {
	opts := []kgo.Opt{kgo.DefaultProduceTopic("bench"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(1024)}
	if txnID != "" {
		opts = append(opts, kgo.TransactionalID(txnID), kgo.TransactionTimeout(time.Minute))
	}
	cl := c.Client(opts...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	var acked, answered atomic.Int64
	var failed firstError
	produced := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.set(err)
		}
		answered.Add(1)
	}
	next := func() {
		if txnID == "" {
			cl.Produce(ctx, &kgo.Record{Value: value}, produced)
			acked.Store(answered.Load()) // acknowledged as they come
			return
		}
		if err := cl.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
		for range 1000 {
			cl.Produce(ctx, &kgo.Record{Value: value}, produced)
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			b.Fatal(err)
		}
		acked.Store(answered.Load()) // committed with the end
	}
	for warm := time.Now(); time.Since(warm) < time.Second; {
		next()
	}
	start, from := time.Now(), acked.Load()
	for time.Since(start) < d {
		next()
	}
	n, elapsed := acked.Load()-from, time.Since(start)
	_ = cl.Flush(ctx)
	if err := failed.get(); err != nil {
		b.Fatalf("produce failed: %v", err)
	}
	return float64(n) / elapsed.Seconds()
}

// smallRate runs producers that each write 10 records and wait for
// them, as a flush or as a transaction (txnPrefix set), for d, and returns
// how many such rounds they made per second: how much the coordinator
// (the metadata group, docs/design/transactions.md) takes.
func smallRate(b *testing.B, c *brokertest.Cluster, n int, value []byte, txnPrefix string, d time.Duration) float64 {
	var rounds atomic.Int64
	var failed firstError
	deadline := time.Now().Add(d)
	var producers sync.WaitGroup
	for i := range n {
		opts := []kgo.Opt{kgo.DefaultProduceTopic("bench"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0)}
		if txnPrefix != "" {
			opts = append(opts, kgo.TransactionalID(fmt.Sprintf("%s-%d", txnPrefix, i)), kgo.TransactionTimeout(time.Minute))
		}
		cl := c.Client(opts...)
		producers.Go(func() {
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
			defer cancel()
			for time.Now().Before(deadline) {
				if txnPrefix != "" {
					if err := cl.BeginTransaction(); err != nil {
						failed.set(err)
						return
					}
				}
				for range 10 {
					cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
						if err != nil {
							failed.set(err)
						}
					})
				}
				err := cl.Flush(ctx)
				if txnPrefix != "" && err == nil {
					err = cl.EndTransaction(ctx, kgo.TryCommit)
				}
				if err != nil {
					failed.set(err)
					return
				}
				rounds.Add(1)
			}
		})
	}
	start := time.Now()
	producers.Wait()
	if err := failed.get(); err != nil {
		b.Fatalf("small rounds failed: %v", err)
	}
	return float64(rounds.Load()) / time.Since(start).Seconds()
}

// consumeRate reads the topic from the start to its end with a new client
// at the isolation level and returns the records per second.
func consumeRate(b *testing.B, c *brokertest.Cluster, level kgo.IsolationLevel) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ends, err := c.Admin().ListEndOffsets(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { left[o.Partition] = o.Offset })
	cl := c.Client(kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(level))
	defer cl.Close()
	start, n := time.Now(), 0
	for len(left) > 0 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			n++
			// The last record is a marker under either level: a partition
			// is read once a record at or past its end less a marker is in.
			if r.Offset+2 >= left[r.Partition] {
				delete(left, r.Partition)
			}
		})
	}
	if ctx.Err() != nil {
		b.Fatalf("reading the topic: %v", ctx.Err())
	}
	return float64(n) / time.Since(start).Seconds()
}

// latencies measures, one at a time, an idempotent record's
// acknowledgement, a transaction of one record from begin to the end's
// answer, and the end's share of it, in milliseconds.
func latencies(b *testing.B, c *brokertest.Cluster, value []byte) (produce, whole, end []float64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	plain := c.Client(kgo.DefaultProduceTopic("bench"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	defer plain.Close()
	txn := c.Client(kgo.DefaultProduceTopic("bench"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.TransactionalID("bench-latency"), kgo.TransactionTimeout(time.Minute))
	defer txn.Close()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for i := range 520 {
		began := time.Now()
		if err := plain.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		p := time.Since(began)
		began = time.Now()
		if err := txn.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
		if err := txn.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		ending := time.Now()
		if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
			b.Fatal(err)
		}
		if i >= 20 { // warm-up: connections, producer ids, the switch to transaction.version 2
			produce, whole, end = append(produce, ms(p)), append(whole, ms(time.Since(began))), append(end, ms(time.Since(ending)))
		}
	}
	return produce, whole, end
}

// firstError keeps the first error that producers' callbacks report.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// quantile is the q-quantile of vs, by rank.
func quantile(vs []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	return s[min(int(q*float64(len(s))), len(s)-1)]
}
