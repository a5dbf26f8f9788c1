package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
)

// TestTopicTrafficMetrics: the per-topic counters the dashboards plot
// count what happened, across the brokers: every record produced once,
// also when an idempotent producer's retry of a batch arrives again, the
// bytes as sent, and the bytes fetch answers carried.
func TestTopicTrafficMetrics(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("counted", 3, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	producer := c.Client(kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	const n = 120
	value := []byte(strings.Repeat("x", 100))
	for i := range n {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "counted", Partition: int32(i % 3), Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A batch sent again as a retry is recognised and not counted twice.
	retried := batch(9000, 0, 0, "retried")
	for range 2 {
		if p := produceRaw(t, c.Client(), "counted", 0, -1, retried); p.ErrorCode != 0 {
			t.Fatalf("the idempotent batch: error %d", p.ErrorCode)
		}
	}

	sum := func(name string) float64 {
		total := 0.0
		for i := range c.Brokers {
			v, _ := c.Metric(i, name, `topic="counted"`)
			total += v
		}
		return total
	}
	if got := sum("raftka_topic_records_in_total"); got != n+1 {
		t.Errorf("records in: %v, want %d: each produced once, the retried batch once", got, n+1)
	}
	in := sum("raftka_topic_bytes_in_total")
	if in < n*float64(len(value)) {
		t.Errorf("bytes in: %v, less than the %d record values alone", in, n*len(value))
	}
	reader := c.Client(kgo.ConsumeTopics("counted"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if _, err := brokertest.ConsumeN(ctx, reader, n+1); err != nil {
		t.Fatal(err)
	}
	if out := sum("raftka_topic_bytes_out_total"); out < n*float64(len(value)) {
		t.Errorf("bytes out after reading every record: %v, less than the %d record values alone", out, n*len(value))
	}
}
