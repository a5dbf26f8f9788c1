package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The txn commands: kafka-transactions.sh's list, describe and abort.

func txnList(fs *pflag.FlagSet) runFunc {
	var states []string
	fs.StringArrayVar(&states, "state", nil, "only transactions in this state: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit or CompleteAbort (repeat for more)")
	return func(ctx context.Context, e *env, _ []string) error {
		adm, done, err := e.admin(ctx)
		if err != nil {
			return err
		}
		defer done()
		listed, err := adm.ListTransactions(ctx, nil, states)
		if err != nil {
			return err
		}
		type row struct {
			TransactionalID string `json:"transactionalId"`
			ProducerID      int64  `json:"producerId"`
			State           string `json:"state"`
			Coordinator     int32  `json:"coordinator"`
		}
		rows := []row{}
		for _, t := range listed.Sorted() {
			rows = append(rows, row{t.TxnID, t.ProducerID, t.State, t.Coordinator})
		}
		if e.json {
			return printJSON(e.out, rows)
		}
		var cells [][]string
		for _, r := range rows {
			cells = append(cells, []string{r.TransactionalID, strconv.FormatInt(r.ProducerID, 10), r.State, strconv.Itoa(int(r.Coordinator))})
		}
		return printTable(e.out, []string{"TRANSACTIONAL ID", "PRODUCER ID", "STATE", "COORDINATOR"}, cells)
	}
}

// txnView is one transactional id as txn describe shows it.
type txnView struct {
	TransactionalID string   `json:"transactionalId"`
	State           string   `json:"state"`
	ProducerID      int64    `json:"producerId"`
	ProducerEpoch   int16    `json:"producerEpoch"`
	TimeoutMs       int32    `json:"timeoutMs"`
	Started         string   `json:"started,omitempty"`
	Partitions      []string `json:"partitions"`
	Coordinator     int32    `json:"coordinator"`
}

func txnDescribe(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usagef("name one or more transactional ids")
	}
	adm, done, err := e.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	described, err := adm.DescribeTransactions(ctx, args...)
	if err != nil {
		return err
	}
	views := []txnView{}
	for _, d := range described.Sorted() {
		if d.Err != nil {
			return fmt.Errorf("transactional id %s: %w", d.TxnID, d.Err)
		}
		views = append(views, viewOf(d))
	}
	if e.json {
		return printJSON(e.out, views)
	}
	var cells [][]string
	for _, v := range views {
		cells = append(cells, []string{v.TransactionalID, v.State, strconv.FormatInt(v.ProducerID, 10), strconv.Itoa(int(v.ProducerEpoch)),
			strconv.Itoa(int(v.TimeoutMs)), v.Started, strings.Join(v.Partitions, ","), strconv.Itoa(int(v.Coordinator))})
	}
	return printTable(e.out, []string{"TRANSACTIONAL ID", "STATE", "PRODUCER ID", "EPOCH", "TIMEOUT MS", "STARTED", "PARTITIONS", "COORDINATOR"}, cells)
}

func viewOf(d kadm.DescribedTransaction) txnView {
	v := txnView{TransactionalID: d.TxnID, State: d.State, ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch,
		TimeoutMs: d.TimeoutMillis, Partitions: []string{}, Coordinator: d.Coordinator}
	if d.StartTimestamp > 0 {
		v.Started = time.UnixMilli(d.StartTimestamp).UTC().Format(time.RFC3339)
	}
	for _, tp := range d.Topics.Sorted() {
		for _, p := range tp.Partitions {
			v.Partitions = append(v.Partitions, fmt.Sprintf("%s/%d", tp.Topic, p))
		}
	}
	return v
}

// txnAbort aborts open transactions, named by id or found on a partition
// (kafka-transactions.sh abort's use: a transaction that holds readers
// back). It asks for a new producer epoch of the id, as a restarted
// producer does: the coordinator fences the old producer and aborts its
// transaction with markers on every partition of it, so no write of the
// old producer can go in afterwards.
func txnAbort(fs *pflag.FlagSet) runFunc {
	topic := fs.String("topic", "", "with --partition: abort the transactions open on this partition")
	partition := fs.Int32("partition", -1, "with --topic: the partition")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the coordinator to end each transaction")
	return func(ctx context.Context, e *env, ids []string) error {
		if (len(ids) == 0) == (*topic == "") || (*topic != "") != (*partition >= 0) {
			return usagef("name the transactional ids, or --topic T --partition P for the transactions open there")
		}
		cl, err := e.client(ctx)
		if err != nil {
			return err
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		if *topic != "" {
			if ids, err = openOn(ctx, adm, *topic, int32(*partition)); err != nil {
				return err
			}
			if len(ids) == 0 {
				return fmt.Errorf("%s/%d has no open transaction", *topic, *partition)
			}
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		for _, id := range ids {
			if err := abortTxn(ctx, cl, adm, id); err != nil {
				return fmt.Errorf("transactional id %s: %w", id, err)
			}
			if err := e.report(map[string]any{"aborted": id}, "aborted the transaction of %s; its producer is fenced", id); err != nil {
				return err
			}
		}
		return nil
	}
}

// openOn are the transactional ids with a transaction open on a partition.
func openOn(ctx context.Context, adm *kadm.Client, topic string, partition int32) ([]string, error) {
	described, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {partition: {}}})
	if err != nil {
		return nil, err
	}
	var producers []int64
	for _, p := range described.SortedPartitions() {
		if p.Err != nil {
			return nil, fmt.Errorf("%s/%d: %w", topic, partition, p.Err)
		}
		for _, d := range p.ActiveProducers.Sorted() {
			if d.CurrentTxnStartOffset >= 0 {
				producers = append(producers, d.ProducerID)
			}
		}
	}
	if len(producers) == 0 {
		return nil, nil
	}
	listed, err := adm.ListTransactions(ctx, producers, nil)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, t := range listed.Sorted() {
		ids = append(ids, t.TxnID)
	}
	return ids, nil
}

// abortTxn fences id's producer and waits until its open transaction is
// aborted; a transaction already ending is refused, since a commit under
// way cannot be undone.
func abortTxn(ctx context.Context, cl *kgo.Client, adm *kadm.Client, id string) error {
	described, err := adm.DescribeTransactions(ctx, id)
	if err != nil {
		return err
	}
	d := described[id]
	if d.Err != nil {
		return d.Err
	}
	if d.State != "Ongoing" {
		return fmt.Errorf("no open transaction (state %s)", d.State)
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), d.TimeoutMillis
	retriable := []error{kerr.ConcurrentTransactions, kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress}
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil || !slices.ContainsFunc(retriable, func(r error) bool { return errors.Is(err, r) }) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the abort did not complete: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
