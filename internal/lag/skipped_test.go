package lag_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/lag"
)

// Against a real broker: a span of committed records and their marker, an
// aborted transaction, a plain record, and a transaction still open.
func TestSkippedCountsMarkersAndAbortedRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	c := brokertest.Start(t, brokertest.Options{Brokers: 1})
	c.CreateTopic("lag-t", 1, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := c.Client(kgo.TransactionalID("lag-tx"), kgo.DefaultProduceTopic("lag-t"), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer p.Close()
	if err := brokertest.InTransaction(ctx, p, true, "0", "1", "2", "3", "4"); err != nil { // commit marker at 5
		t.Fatal(err)
	}
	if err := brokertest.InTransaction(ctx, p, false, "6", "7", "8"); err != nil { // abort marker at 9
		t.Fatal(err)
	}
	plain := c.Client(kgo.DefaultProduceTopic("lag-t"))
	defer plain.Close()
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("plain")}).FirstErr(); err != nil { // 10
		t.Fatal(err)
	}
	cl := c.Client()
	defer cl.Close()
	for _, tc := range []struct {
		name      string
		from, end int64
		want      int64
	}{
		{"a consumer past the last committed record: only the marker", 5, 10, 5},
		{"from the start", 0, 11, 5},
		{"the commit marker alone", 5, 6, 1},
		{"records only", 0, 5, 0},
		{"the aborted records alone", 6, 9, 3},
		{"the plain record", 10, 11, 0},
		{"longer than MaxExact: counted in offsets", 0, lag.MaxExact + 1, 0},
	} {
		got := lag.Skipped(ctx, cl, []lag.Span{{Topic: "lag-t", Partition: 0, From: tc.from, End: tc.end}})
		if got["lag-t"][0] != tc.want {
			t.Errorf("%s: [%d, %d) skipped %d, want %d", tc.name, tc.from, tc.end, got["lag-t"][0], tc.want)
		}
	}
	// An open transaction holds the read at the last stable offset: its
	// records count as lag until it ends.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("open")}).FirstErr(); err != nil { // 11
		t.Fatal(err)
	}
	if got := lag.Skipped(ctx, cl, []lag.Span{{Topic: "lag-t", Partition: 0, From: 5, End: 12}}); got["lag-t"][0] != 5 {
		t.Errorf("with a transaction open: skipped %d, want 5 (the open record is lag)", got["lag-t"][0])
	}
	if got := lag.Skipped(ctx, cl, []lag.Span{{Topic: "nosuch", Partition: 0, From: 0, End: 3}}); len(got) != 0 {
		t.Errorf("a missing topic: %v, want nothing skipped", got)
	}
}
