package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
)

// Brokers beyond the three metadata voters join as observers and host
// partitions like any other broker.
func TestBrokersBeyondMetadataVotersHostPartitions(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 5})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Created through an observer, whose proposal the metadata leader takes.
	adm := c.Admin()
	// Brokers are listed once their peers have seen them answer; a fresh
	// client each time, as franz-go caches metadata.
	for {
		md, err := kgoAdmin(t, c, c.Brokers[0].KafkaAddr).BrokerMetadata(ctx)
		if err == nil && len(md.Brokers) == 5 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("metadata lists %d brokers (%v), want 5", len(md.Brokers), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	observer := kgoAdmin(t, c, c.Brokers[4].KafkaAddr)
	resp, err := observer.CreateTopic(ctx, 10, 3, nil, "wide")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic through broker 4: %v", err)
	}
	tmd, err := adm.Metadata(ctx, "wide")
	if err != nil {
		t.Fatal(err)
	}
	hosting := map[int32]int{}
	for _, p := range tmd.Topics["wide"].Partitions {
		for _, r := range p.Replicas {
			hosting[r]++
		}
	}
	if len(hosting) != 5 {
		t.Fatalf("replicas per broker %v: want all 5 brokers used", hosting)
	}
	produceN(t, c, "wide", 500)
	c.Kill(4)
	c.Restart(4)
	c.WaitReady(4)
	got := consumeAll(t, c, "wide", 500, kgo.FetchMaxWait(500*time.Millisecond))
	if len(got) != 500 {
		t.Fatalf("read %d records, want 500", len(got))
	}
}
