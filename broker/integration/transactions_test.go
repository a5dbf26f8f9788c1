package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/broker/growth"
)

// transactional is a franz-go producer of transactional id id.
func transactional(c *brokertest.Cluster, id, topic string) *kgo.Client {
	return c.Client(kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.TransactionTimeout(30*time.Second))
}

func values(recs []*kgo.Record) map[string]int {
	out := map[string]int{}
	for _, r := range recs {
		out[string(r.Value)]++
	}
	return out
}

// A read_committed consumer reads every committed record once and none of
// an aborted transaction; a read_uncommitted one reads both.
func TestTransactionsCommitAndAbort(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("txn-out", 3, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := transactional(c, "t1", "txn-out")
	defer p.Close()
	var committed, aborted []string
	for i := range 10 {
		committed = append(committed, fmt.Sprintf("c%d", i))
		aborted = append(aborted, fmt.Sprintf("a%d", i))
	}
	if err := brokertest.InTransaction(ctx, p, true, committed[:5]...); err != nil {
		t.Fatal(err)
	}
	if err := brokertest.InTransaction(ctx, p, false, aborted...); err != nil {
		t.Fatal(err)
	}
	if err := brokertest.InTransaction(ctx, p, true, committed[5:]...); err != nil {
		t.Fatal(err)
	}
	got := values(consumeAll(t, c, "txn-out", 10, kgo.FetchIsolationLevel(kgo.ReadCommitted())))
	for _, v := range committed {
		if got[v] != 1 {
			t.Fatalf("read_committed read %q %d times: %v", v, got[v], got)
		}
	}
	if len(got) != 10 {
		t.Fatalf("read_committed read %v, want the 10 committed records alone", got)
	}
	if all := values(consumeAll(t, c, "txn-out", 20)); len(all) != 20 {
		t.Fatalf("read_uncommitted read %d values, want 20 (aborted ones too)", len(all))
	}
}

// A second producer with the same transactional id fences the first: the
// first's writes and its commit are refused, and what it left open is
// aborted.
func TestTransactionalIDFencesTheOldProducer(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("txn-fence", 3, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	old := transactional(c, "t2", "txn-fence")
	defer old.Close()
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fresh := transactional(c, "t2", "txn-fence")
	defer fresh.Close()
	if err := brokertest.InTransaction(ctx, fresh, true, "fresh"); err != nil {
		t.Fatal(err)
	}
	err := old.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		err = old.ProduceSync(ctx, &kgo.Record{Value: []byte("late")}).FirstErr()
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the fenced producer's commit: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	got := values(consumeAll(t, c, "txn-fence", 1, kgo.FetchIsolationLevel(kgo.ReadCommitted())))
	if len(got) != 1 || got["fresh"] != 1 {
		t.Fatalf("read_committed read %v, want only the new producer's record", got)
	}
}

// An open transaction holds read_committed consumers at the last stable
// offset, including records committed after it began; once it times out
// it is aborted, its producer fenced, and the consumers move on.
func TestOpenTransactionHoldsReadersUntilItTimesOut(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("txn-open", 1, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A first transaction, so that the partition is led and the
	// coordinator known before the clock of the one left open runs.
	other := transactional(c, "t-other", "txn-open")
	defer other.Close()
	if err := brokertest.InTransaction(ctx, other, true, "before"); err != nil {
		t.Fatal(err)
	}
	open := c.Client(kgo.TransactionalID("t-open"), kgo.DefaultProduceTopic("txn-open"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.TransactionTimeout(4*time.Second))
	defer open.Close()
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, &kgo.Record{Value: []byte("left open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := brokertest.InTransaction(ctx, other, true, "committed after"); err != nil {
		t.Fatal(err)
	}
	described, err := c.Admin().DescribeProducers(ctx, kadm.TopicsSet{"txn-open": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	openAt := map[int64]bool{}
	described.EachProducer(func(p kadm.DescribedProducer) { openAt[p.CurrentTxnStartOffset] = true })
	// The committed transaction's marker may still be on its way (EndTxn
	// answers once the commit is decided), so only the open one is sure.
	if !openAt[2] {
		t.Fatalf("DescribeProducers: transactions open at %v, want one at offset 2", openAt)
	}
	reader := c.Client(kgo.ConsumeTopics("txn-open"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	defer reader.Close()
	read, err := brokertest.ConsumeN(ctx, reader, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(read[1].Value); string(read[0].Value) != "before" || got != "committed after" || time.Since(began) < 2*time.Second {
		t.Fatalf("read_committed read %q, %q %v after the open transaction began, want the committed records only, the second once "+
			"the open transaction timed out (4 s)", read[0].Value, got, time.Since(began))
	}
	err = open.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("commit of the timed-out transaction: %v, want the producer fenced", err)
	}
}

// A consume-transform-produce pipeline (franz-go's GroupTransactSession)
// writes every input record to its output exactly once, and commits the
// group's offsets with its output.
func TestGroupTransactSessionIsExactlyOnce(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("pipe-in", 3, 3, nil)
	c.CreateTopic("pipe-out", 3, 3, nil)
	const n = 300
	produceN(t, c, "pipe-in", n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.Bootstrap()...), kgo.TransactionalID("pipe"), kgo.ConsumerGroup("pipe-g"),
		kgo.ConsumeTopics("pipe-in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DefaultProduceTopic("pipe-out"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.TransactionTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for done := 0; done < n; {
		fetches := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("processed %d of %d: %v", done, n, ctx.Err())
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		var batch int
		fetches.EachRecord(func(r *kgo.Record) {
			batch++
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: append([]byte("out-"), r.Value...)}, nil)
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatal(err)
		}
		if committed {
			done += batch
		}
	}
	got := values(consumeAll(t, c, "pipe-out", n, kgo.FetchIsolationLevel(kgo.ReadCommitted())))
	for i := range n {
		if v := fmt.Sprintf("out-%d", i); got[v] != 1 {
			t.Fatalf("output holds %q %d times", v, got[v])
		}
	}
	adm := c.Admin()
	offsets, err := adm.FetchOffsets(ctx, "pipe-g")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offsets.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != n {
		t.Fatalf("the group committed offsets summing to %d, want %d (every input record)", total, n)
	}
}

// kafka-transactions.sh's APIs: an open transaction is listed and
// described with its partitions; a topic deleted under an ending
// transaction does not hold the transactional id for ever.
func TestTransactionsAreListedAndDescribed(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("txn-kept", 2, 3, nil)
	c.CreateTopic("txn-doomed", 1, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := transactional(c, "t-listed", "txn-kept")
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"txn-kept", "txn-doomed"} {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := c.Admin()
	listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed["t-listed"]; !ok || len(listed) != 1 {
		t.Fatalf("ongoing transactions listed: %+v", listed)
	}
	described, err := adm.DescribeTransactions(ctx, "t-listed", "t-unknown")
	if err != nil {
		t.Fatal(err)
	}
	d := described["t-listed"]
	if d.Err != nil || d.State != "Ongoing" || len(d.Topics["txn-kept"])+len(d.Topics["txn-doomed"]) != 2 || d.StartTimestamp <= 0 {
		t.Fatalf("described %+v", d)
	}
	if !errors.Is(described["t-unknown"].Err, kerr.TransactionalIDNotFound) {
		t.Fatalf("an unknown id described as %+v", described["t-unknown"])
	}
	if _, err := adm.DeleteTopics(ctx, "txn-doomed"); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := brokertest.InTransaction(ctx, p, true, "next"); err != nil {
		t.Fatalf("the next transaction after a topic of the last was deleted: %v", err)
	}
	if got := values(consumeAll(t, c, "txn-kept", 2, kgo.FetchIsolationLevel(kgo.ReadCommitted()))); got["v"] != 1 || got["next"] != 1 {
		t.Fatalf("read_committed read %v", got)
	}
}

// A producer asking for a longer transaction timeout than the broker
// allows is refused with Kafka's error.
func TestTransactionTimeoutIsCapped(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 1, ExtraFlags: []string{"--transaction-max-timeout=5s"}})
	c.CreateTopic("txn-capped", 1, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := c.Client(kgo.TransactionalID("t-capped"), kgo.DefaultProduceTopic("txn-capped"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.TransactionTimeout(10*time.Second))
	defer p.Close()
	// franz-go asks for its producer id in BeginTransaction or at the
	// first record, and wraps the answer without Unwrap.
	err := p.BeginTransaction()
	if err == nil {
		err = p.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
	}
	if err == nil || !strings.Contains(err.Error(), kerr.InvalidTransactionTimeout.Message) {
		t.Fatalf("a 10 s transaction timeout under --transaction-max-timeout=5s: %v, want INVALID_TRANSACTION_TIMEOUT", err)
	}
}

// coordinatorOf is the broker the cluster names as its controller: the
// metadata leader, which coordinates every transactional id.
func coordinatorOf(t *testing.T, c *brokertest.Cluster) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := c.Admin().BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return int(md.Controller)
}

// transactPipeline runs a GroupTransactSession from in to out, a
// transaction per 50 records at most, until it committed n records; it
// keeps the count in done. franz-go's session says that an error from End
// is not to be retried: as an application does, the pipeline then closes
// the session and opens another with the same transactional id, whose
// InitProducerId fences the old producer and aborts what it left open.
func transactPipeline(ctx context.Context, t *testing.T, c *brokertest.Cluster, in, out string, n int, done *atomic.Int64) {
	for done.Load() < int64(n) && ctx.Err() == nil {
		if err := transactSession(ctx, t, c, in, out, n, done); err != nil {
			t.Logf("session ended after %d committed: %v", done.Load(), err)
		}
	}
}

// transactSession is one session of transactPipeline, until an error.
func transactSession(ctx context.Context, t *testing.T, c *brokertest.Cluster, in, out string, n int, done *atomic.Int64) error {
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.Bootstrap()...), kgo.TransactionalID(in+"-pipe"), kgo.ConsumerGroup(in+"-g"),
		kgo.ConsumeTopics(in), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DefaultProduceTopic(out), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.TransactionTimeout(20*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		return err
	}
	defer sess.Close()
	for done.Load() < int64(n) && ctx.Err() == nil {
		fetches := sess.PollRecords(ctx, 50)
		if err := sess.Begin(); err != nil {
			return err
		}
		batch := 0
		fetches.EachRecord(func(r *kgo.Record) {
			batch++
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: append([]byte("out-"), r.Value...)}, nil)
		})
		time.Sleep(50 * time.Millisecond) // the work a batch takes, so that the kills find transactions under way
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			return err
		}
		if committed {
			done.Add(int64(batch))
		} else {
			t.Logf("not committed: batch of %d at %d", batch, done.Load())
		}
	}
	return nil
}

// A read-process-write pipeline keeps exactly-once while partition leaders
// and the transaction coordinator are SIGKILLed: every input record is in
// the output once for read_committed consumers, and nothing is lost.
func TestTransactionalPipelineUnderFire(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("fire-in", 3, 3, nil)
	c.CreateTopic("fire-out", 3, 3, nil)
	const n = 20000
	produceN(t, c, "fire-in", n)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var done atomic.Int64
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		transactPipeline(ctx, t, c, "fire-in", "fire-out", n, &done)
	}()
	for round, victim := range []func() int{
		func() int { return c.LeaderOf("fire-out", 0) },
		func() int { return coordinatorOf(t, c) },
		func() int { return c.LeaderOf("fire-in", 1) },
	} {
		time.Sleep(time.Second)
		v := victim()
		if done.Load() >= n {
			t.Fatalf("round %d: the pipeline finished before the kill; the test proves nothing", round)
		}
		t.Logf("round %d: SIGKILL broker %d with %d records committed", round, v, done.Load())
		c.Kill(v)
		time.Sleep(2 * time.Second)
		c.Restart(v)
		c.WaitReady(v)
	}
	<-finished
	if done.Load() != n {
		t.Fatalf("the pipeline committed %d records, want %d", done.Load(), n)
	}
	got := values(consumeAll(t, c, "fire-out", n, kgo.FetchIsolationLevel(kgo.ReadCommitted())))
	for i := range n {
		if v := fmt.Sprintf("out-%d", i); got[v] != 1 {
			t.Fatalf("output holds %q %d times", v, got[v])
		}
	}
}

// clientTransactions runs a client's transactions program (argv in dir)
// against a cluster of three brokers: a commit of 20 records and an abort
// of 30 to name-txn, and a consume-transform-produce copy of name-in's
// records to name-out committing the group name-in-group's offsets; then
// franz-go's read_committed consumer reads them back.
func clientTransactions(t *testing.T, name, dir string, argv ...string) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	txn, in, out := name+"-txn", name+"-in", name+"-out"
	for _, topic := range []string{txn, in, out} {
		c.CreateTopic(topic, 3, 3, nil)
	}
	const n = 500
	// Uncompressed: KafkaJS reads no snappy without a codec of its own.
	plain := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(in), kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer plain.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint(i))}
	}
	if err := plain.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BROKERS="+strings.Join(c.AllAddrs(), ","), "TOPIC="+txn, "COMMITTED=20", "ABORTED=30",
		"IN="+in, "OUT="+out, "COUNT="+strconv.Itoa(n))
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, output)
	}
	got := values(consumeAll(t, c, txn, 20, kgo.FetchIsolationLevel(kgo.ReadCommitted())))
	for i := range 20 {
		if got[fmt.Sprintf("c%d", i)] != 1 {
			t.Fatalf("read_committed read %v, want c0-c19 once each and no aborted record", got)
		}
	}
	copied := values(consumeAll(t, c, out, n, kgo.FetchIsolationLevel(kgo.ReadCommitted())))
	for i := range n {
		if v := fmt.Sprintf("out-%d", i); copied[v] != 1 {
			t.Fatalf("%s's copy holds %q %d times", name, v, copied[v])
		}
	}
	offsets, err := c.Admin().FetchOffsets(ctx, in+"-group")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offsets.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != n {
		t.Fatalf("the group committed offsets summing to %d, want %d", total, n)
	}
}

// librdkafka's transactional producer (Debian's python3-confluent-kafka):
// init_transactions, commit, abort and send_offsets_to_transaction.
func TestLibrdkafkaTransactions(t *testing.T) {
	clientTransactions(t, "rdk", confluentKafkaDir(t), debianPython, "transactions.py")
}

// KafkaJS's transactions: commit, abort and sendOffsets.
func TestKafkaJSTransactions(t *testing.T) {
	clientTransactions(t, "kjs", kafkajsDir(t), "node", "transactions.js")
}

// A consumer of a group whose offsets an open transaction is to commit
// waits for the transaction to end (OffsetFetch's require_stable), so it
// does not read again what the transaction consumed (KIP-447).
func TestGroupWaitsForTheTransactionsOffsets(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("stable-in", 1, 3, nil)
	produceN(t, c, "stable-in", 20)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := c.Client()
	defer cl.Close()
	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.TransactionalID, initReq.TransactionTimeoutMillis = kmsg.StringPtr("t-stable"), 60000
	initResp, err := initReq.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(initResp.ErrorCode)
	}
	if err != nil {
		t.Fatal(err)
	}
	pid, epoch := initResp.ProducerID, initResp.ProducerEpoch
	addReq := kmsg.NewPtrAddOffsetsToTxnRequest()
	addReq.TransactionalID, addReq.ProducerID, addReq.ProducerEpoch, addReq.Group = "t-stable", pid, epoch, "stable-g"
	addResp, err := addReq.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(addResp.ErrorCode)
	}
	if err != nil {
		t.Fatal(err)
	}
	commitReq := kmsg.NewPtrTxnOffsetCommitRequest()
	commitReq.TransactionalID, commitReq.Group, commitReq.ProducerID, commitReq.ProducerEpoch, commitReq.Generation =
		"t-stable", "stable-g", pid, epoch, -1
	commitTopic := kmsg.NewTxnOffsetCommitRequestTopic()
	commitTopic.Topic = "stable-in"
	commitPart := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	commitPart.Offset = 12
	commitTopic.Partitions = append(commitTopic.Partitions, commitPart)
	commitReq.Topics = append(commitReq.Topics, commitTopic)
	commitResp, err := commitReq.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(commitResp.Topics[0].Partitions[0].ErrorCode)
	}
	if err != nil {
		t.Fatal(err)
	}
	fetchOffset := func(stable bool) (int64, error) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group, req.RequireStable = "stable-g", stable
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "stable-in", Partitions: []int32{0}}}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, err
		}
		p := resp.Topics[0].Partitions[0]
		return p.Offset, kerr.ErrorForCode(p.ErrorCode)
	}
	if _, err := fetchOffset(true); !errors.Is(err, kerr.UnstableOffsetCommit) {
		t.Fatalf("require_stable under an open transaction's offset: %v, want UNSTABLE_OFFSET_COMMIT", err)
	}
	if at, err := fetchOffset(false); err != nil || at != -1 {
		t.Fatalf("without require_stable: offset %d, %v; want -1 (nothing committed yet)", at, err)
	}
	// franz-go's consumer always asks for stable offsets: it waits while
	// the transaction is open and starts at 12 once it commits.
	consumer := c.Client(kgo.ConsumerGroup("stable-g"), kgo.ConsumeTopics("stable-in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer consumer.Close()
	pollCtx, pollCancel := context.WithTimeout(ctx, 3*time.Second)
	early := consumer.PollFetches(pollCtx)
	pollCancel()
	if n := early.NumRecords(); n != 0 {
		t.Fatalf("the group's consumer read %d records while the transaction held its offsets", n)
	}
	endReq := kmsg.NewPtrEndTxnRequest()
	endReq.TransactionalID, endReq.ProducerID, endReq.ProducerEpoch, endReq.Commit = "t-stable", pid, epoch, true
	endResp, err := endReq.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(endResp.ErrorCode)
	}
	if err != nil {
		t.Fatal(err)
	}
	if at, err := fetchOffset(true); err != nil || at != 12 {
		t.Fatalf("require_stable after the commit: offset %d, %v; want 12", at, err)
	}
	var first int64 = -1
	for first < 0 && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if first < 0 {
				first = r.Offset
			}
		})
	}
	if first != 12 {
		t.Fatalf("the group's consumer started at offset %d, want 12 (the transaction's commit)", first)
	}
}

// AddPartitionsToTxn's brokers' form (v4+, KIP-890): verify-only answers
// whether a partition is in the open transaction, without adding it; the
// batched add adds.
func TestAddPartitionsToTxnBrokersForm(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 1})
	c.CreateTopic("txn-verify", 3, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := transactional(c, "t-verify", "txn-verify")
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := c.Admin()
	described, err := adm.DescribeTransactions(ctx, "t-verify")
	if err != nil {
		t.Fatal(err)
	}
	d := described["t-verify"]
	var in int32 = -1
	for p := range d.Topics["txn-verify"] {
		in = p
	}
	send := func(epoch int16, verify bool, parts ...int32) map[int32]error {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "t-verify", d.ProducerID, epoch, verify
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = "txn-verify", parts
		tx.Topics = append(tx.Topics, tt)
		req.Transactions = append(req.Transactions, tx)
		resp, err := req.RequestWith(ctx, c.Client())
		// franz-go sends a single add in the producer's form, v3, and
		// answers it in the batched form.
		if err != nil || (verify && resp.Version < 4) || resp.ErrorCode != 0 || len(resp.Transactions) != 1 {
			t.Fatalf("v%d: %v, %+v", resp.GetVersion(), err, resp)
		}
		out := map[int32]error{}
		for _, rt := range resp.Transactions[0].Topics {
			for _, rp := range rt.Partitions {
				out[rp.Partition] = kerr.ErrorForCode(rp.ErrorCode)
			}
		}
		return out
	}
	other := (in + 1) % 3
	got := send(d.ProducerEpoch, true, in, other)
	if got[in] != nil || !errors.Is(got[other], kerr.InvalidTxnState) {
		t.Fatalf("verify-only of %d (in the transaction) and %d (not): %v", in, other, got)
	}
	if got := send(d.ProducerEpoch-1, true, in); !errors.Is(got[in], kerr.ProducerFenced) {
		t.Fatalf("verify-only with an old epoch: %v, want PRODUCER_FENCED", got)
	}
	if got := send(d.ProducerEpoch, false, other); got[other] != nil {
		t.Fatalf("add in the batched form: %v", got)
	}
	if got := send(d.ProducerEpoch, true, other); got[other] != nil {
		t.Fatalf("verify-only after the add: %v", got)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	got = send(d.ProducerEpoch, true, in)
	for errors.Is(got[in], kerr.ConcurrentTransactions) && ctx.Err() == nil { // its markers are being written
		time.Sleep(50 * time.Millisecond)
		got = send(d.ProducerEpoch, true, in)
	}
	if !errors.Is(got[in], kerr.InvalidTxnState) {
		t.Fatalf("verify-only after the commit: %v, want INVALID_TXN_STATE", got)
	}
}

// txnKeyedProducer is franzProducer's load in transactions of 30 records,
// every abortEvery-th aborted: only a committed transaction's records are
// acknowledged to check, and the aborted ones are kept in aborted.
func txnKeyedProducer(abortEvery int, aborted map[string][]int) keyedProducer {
	return func(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, check *brokertest.KeyOrder, stop <-chan struct{}) <-chan struct{} {
		producer := c.Client(append(slices.Clone(followGrowth), kgo.TransactionalID(topic+"-producer"), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.TransactionTimeout(30*time.Second))...)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer producer.Close()
			records := newKeyedRecords()
			defer records.close()
			for n := 0; ; n++ {
				if err := producer.BeginTransaction(); err != nil {
					t.Errorf("begin: %v", err)
					return
				}
				var written []kgo.Record
				for range 30 { // after stop too: the transaction is ended whole
					key, seq, _ := records.next(stop)
					r := kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(strconv.Itoa(seq))}
					written = append(written, r)
					producer.Produce(ctx, &r, nil)
				}
				commit := n%abortEvery != abortEvery-1
				if err := producer.Flush(ctx); err != nil {
					commit = false
				}
				if err := producer.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
					t.Errorf("end of transaction %d: %v", n, err)
					return
				}
				for _, r := range written {
					seq, _ := strconv.Atoi(string(r.Value))
					if commit {
						check.Ack(string(r.Key), seq)
					} else {
						aborted[string(r.Key)] = append(aborted[string(r.Key)], seq)
					}
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		return done
	}
}

// The topic grows 4 -> 6 -> 9 while a transactional producer keeps
// transactions open on it and a read_committed group lags: the barrier
// of ordered growth and the last stable offset compose, so each key's
// committed records are processed in order, every one of them, and no
// aborted record is.
func TestOrderedGrowthDuringOpenTransactions(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	aborted := map[string][]int{}
	readCommitted := func(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, check *brokertest.KeyOrder) func() {
		return franzConsumers(ctx, t, c, topic, check, kgo.NewOffset().AtEnd(), 4*time.Millisecond, 0, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	check := brokertest.NewKeyOrder(4)
	got := runKeyedGrowth(t, c, scenario{topic: "txn-growth", configs: map[string]*string{"raftka.growth.quiet.ms": kmsg.StringPtr("2000")},
		group: readCommitted, producer: txnKeyedProducer(4, aborted), check: check})
	t.Logf("%d committed records acknowledged, %d from new partitions, %d reordered, %d never processed", got.Acked, got.Grown, got.Reordered, got.Missing)
	if got.Acked == 0 || got.Grown == 0 {
		t.Fatalf("no committed record, or none from a partition the growths added: %+v", got)
	}
	if got.Reordered > 0 || got.Missing > 0 {
		t.Errorf("%d committed records reordered (first: %s), %d never processed", got.Reordered, got.FirstBad, got.Missing)
	}
	var seen, all int
	for key, seqs := range aborted {
		for _, seq := range seqs {
			all++
			if check.Processed(key, seq) {
				seen++
			}
		}
	}
	if all == 0 || seen > 0 {
		t.Errorf("%d of %d aborted records were processed by the read_committed group", seen, all)
	}
	for i := range c.Brokers {
		if n, ok := c.Metric(i, "raftka_growth_forced_lifts_total", `topic="txn-growth"`); ok && n > 0 {
			t.Errorf("broker %d lifted %v growths at their bound: the group should have drained them", i, n)
		}
	}
}

// A growth whose old partitions end in markers and aborted records lifts
// as drained once a read_committed group read every committed record: the
// group commits past its last record, below the split, and the leaders'
// report of where the delivered records end lowers the release to it.
// Without that report the hold waits for its bound, which is an hour here.
func TestGrowthLiftsPastTrailingMarkers(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c.CreateTopic("trailing", 2, 3, map[string]*string{"raftka.growth.quiet.ms": kmsg.StringPtr("500"),
		"raftka.growth.max.hold.ms": kmsg.StringPtr("3600000")})
	p := c.Client(kgo.TransactionalID("trailing"), kgo.DefaultProduceTopic("trailing"), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer p.Close()
	committed := []string{"a", "b", "c", "d", "e", "f"} // keys over both partitions
	if err := brokertest.InTransaction(ctx, p, true, committed...); err != nil {
		t.Fatal(err)
	}
	if err := brokertest.InTransaction(ctx, p, false, "g", "h", "i", "j"); err != nil {
		t.Fatal(err)
	}
	group := c.Client(kgo.ConsumerGroup("trailing-readers"), kgo.ConsumeTopics("trailing"), kgo.DisableAutoCommit(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer group.Close()
	for read := 0; read < len(committed); {
		fetches := group.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		read += fetches.NumRecords()
	}
	if err := group.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	adm := c.Admin()
	ends, err := adm.ListEndOffsets(ctx, "trailing")
	if err != nil {
		t.Fatal(err)
	}
	offsets, err := adm.FetchOffsets(ctx, "trailing-readers")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(end kadm.ListedOffset) {
		if o, _ := offsets.Lookup("trailing", end.Partition); o.At >= end.Offset {
			t.Fatalf("partition %d: the group committed %d, at or past the log end %d: no marker trails its records", end.Partition, o.At, end.Offset)
		}
	})
	if _, err := adm.CreatePartitions(ctx, 1, "trailing"); err != nil {
		t.Fatal(err)
	}
	var st growth.Status
	for ctx.Err() == nil {
		_, body := c.Get(0, "/growth?topic=trailing")
		var out []growth.Status
		if err := json.Unmarshal([]byte(body), &out); err != nil || len(out) != 1 {
			t.Fatalf("GET /growth: %q: %v", body, err)
		}
		if st = out[0]; st.LastLift != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.LastLift == nil || st.LastLift.Reason != growth.Drained {
		t.Fatalf("the growth did not lift as drained: %+v", st)
	}
}

// KIP-890 part 2 with franz-go: the cluster finalizes transaction.version
// 2, so the client adds no partition or group by request, every EndTxn
// gives a new epoch, and a late write of an ended transaction's epoch is
// refused and never read.
func TestTransactionVersion2(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("tv2", 3, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var sent sync.Map // request key -> *atomic.Int64
	p := c.Client(kgo.TransactionalID("t-v2"), kgo.DefaultProduceTopic("tv2"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.TransactionTimeout(30*time.Second), kgo.WithHooks(countRequests{&sent}))
	defer p.Close()
	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(versions.FinalizedFeatures) != 1 || versions.FinalizedFeatures[0].Name != "transaction.version" || versions.FinalizedFeatures[0].MaxVersionLevel != 2 {
		t.Fatalf("finalized features %+v, want transaction.version 2", versions.FinalizedFeatures)
	}
	count := func(k kmsg.Key) int64 {
		if n, ok := sent.Load(int16(k)); ok {
			return n.(*atomic.Int64).Load()
		}
		return 0
	}
	epoch := func() (int64, int16) {
		described, err := c.Admin().DescribeTransactions(ctx, "t-v2")
		if err != nil {
			t.Fatal(err)
		}
		return described["t-v2"].ProducerID, described["t-v2"].ProducerEpoch
	}
	// franz-go opts in at its first EndTxn, once it has read the
	// feature, and asks for a new epoch before the second: the first
	// transaction is of the old kind.
	if err := brokertest.InTransaction(ctx, p, true, "a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	if err := brokertest.InTransaction(ctx, p, true, "d", "e", "f"); err != nil {
		t.Fatal(err)
	}
	pid, firstEpoch := epoch()
	adds := count(kmsg.AddPartitionsToTxn)
	for i := range 3 {
		if err := brokertest.InTransaction(ctx, p, true, fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i), fmt.Sprintf("c%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(kmsg.AddPartitionsToTxn) - adds; n != 0 {
		t.Fatalf("the client sent %d AddPartitionsToTxn after it opted in, want none", n)
	}
	if id, ep := epoch(); id != pid || ep != firstEpoch+3 {
		t.Fatalf("three transactions took producer %d from epoch %d to %d %d, want %d (one bump per EndTxn)", pid, firstEpoch, id, ep, firstEpoch+3)
	}
	// A zombie of an ended transaction writes late, at its epoch.
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr("t-v2"), -1, 5000
	md, err := c.Admin().Metadata(ctx, "tv2")
	if err != nil {
		t.Fatal(err)
	}
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "tv2", md.Topics["tv2"].ID // v13 names it by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = brokertest.TransactionalRecordBatch(pid, firstEpoch+1, 3, "zombie")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	leader := c.LeaderOf("tv2", 0)
	resp, err := req.RequestWith(ctx, c.Client().Broker(leader))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidProducerEpoch.Code && code != kerr.ProducerFenced.Code {
		t.Fatalf("a late write at an ended transaction's epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	if got := values(consumeAll(t, c, "tv2", 15)); got["zombie"] != 0 || len(got) != 15 {
		t.Fatalf("read_uncommitted read %v", got)
	}
}

// countRequests counts the requests a client writes, by key.
type countRequests struct{ sent *sync.Map }

func (h countRequests) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		n, _ := h.sent.LoadOrStore(key, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}
}

// Hostile and malformed transactional requests (ids, producers, epochs,
// partitions drawn from pools of valid and invalid values, in random
// order) each get an answer, and the coordinator still runs a
// transaction to its end afterwards.
func TestHostileTransactionalRequests(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("hostile", 2, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := c.Client(kgo.RequestRetries(0))
	defer cl.Close()
	rng := mathrand.New(mathrand.NewPCG(43, 890))
	pick := func(n int) int { return rng.IntN(n) }
	ids := []string{"t-h1", "t-h2", "", strings.Repeat("x", 300)}
	pids := []int64{-1, 0, 1000, 1001, 1 << 62}
	epochs := []int16{-1, 0, 1, 2, 32767}
	topics := []string{"hostile", "nosuch", ""}
	parts := []int32{-1, 0, 1, 99}
	groups := []string{"g-h", ""}
	for i := range 400 {
		id, pid, epoch := ids[pick(len(ids))], pids[pick(len(pids))], epochs[pick(len(epochs))]
		topic, part := topics[pick(len(topics))], parts[pick(len(parts))]
		var req kmsg.Request
		switch pick(7) {
		case 0:
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch = &id, int32(pick(3)-1)*60000, pid, epoch
			req = r
		case 1:
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch = id, pid, epoch
			r.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{part, part}}}
			req = r
		case 2:
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, pick(2) == 0
			tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: []int32{part}}}
			r.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tx, tx}
			req = r
		case 3:
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = id, pid, epoch, groups[pick(len(groups))]
			req = r
		case 4:
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group, r.Generation = id, pid, epoch, groups[pick(len(groups))], int32(pick(3)-1)
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = part, int64(pick(5)-1)
			r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
			req = r
		case 5:
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = id, pid, epoch, pick(2) == 0
			req = r
		default:
			r := kmsg.NewPtrProduceRequest()
			r.TransactionID, r.Acks, r.TimeoutMillis = &id, -1, 2000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "hostile"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = int32(pick(2)), brokertest.TransactionalRecordBatch(pid, epoch, int32(pick(3)), "hostile")
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			req = r
		}
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		_, err := cl.Request(rctx, req)
		rcancel()
		if err != nil && (errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "connection")) {
			t.Fatalf("request %d, %T %+v: no answer: %v", i, req, req, err)
		}
	}
	for i := range c.Brokers {
		if c.WaitExit(i, 10*time.Millisecond) {
			t.Fatalf("broker %d died under hostile transactional requests", i)
		}
	}
	p := transactional(c, "t-after", "hostile")
	defer p.Close()
	if err := brokertest.InTransaction(ctx, p, true, "after"); err != nil {
		t.Fatalf("a transaction after the hostile requests: %v", err)
	}
	if got := values(consumeAll(t, c, "hostile", 1, kgo.FetchIsolationLevel(kgo.ReadCommitted()))); got["after"] != 1 {
		t.Fatalf("read_committed read %v after the hostile requests", got)
	}
}
