package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

type kadmOffset = kadm.ListedOffset

// batch builds a RecordBatch as a producer sends it.
var batch = brokertest.RecordBatch

// produceRaw sends one Produce request for one partition and returns the
// partition's response.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, partition int32, acks int16, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	// Produce v13 names topics by id; unknown topics keep the zero id.
	if details, err := kadm.NewClient(cl).ListTopics(ctx, topic); err == nil && details[topic].Err == nil {
		rt.TopicID = details[topic].ID
	}
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("produce request: %v", err)
		}
		p := resp.Topics[0].Partitions[0]
		// Leadership may still be settling right after a topic is created.
		if p.ErrorCode == 6 && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return p
	}
}

// kgoAdmin returns an admin client that talks to one broker only.
func kgoAdmin(t *testing.T, c *brokertest.Cluster, addr string) *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}
