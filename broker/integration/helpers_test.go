package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

type kadmOffset = kadm.ListedOffset

// batch builds a RecordBatch as a producer sends it.
var batch = brokertest.RecordBatch

// produceRequest is a Produce request of records to one partition, with a
// 10 s timeout; its topic is named both ways, by name (up to v12) and by id
// (v13).
func produceRequest(topic string, id [16]byte, partition int32, acks int16, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceRaw sends one Produce request for one partition and returns the
// partition's response.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, partition int32, acks int16, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Produce v13 names topics by id; unknown topics keep the zero id.
	var id [16]byte
	if details, err := kadm.NewClient(cl).ListTopics(ctx, topic); err == nil && details[topic].Err == nil {
		id = details[topic].ID
	}
	req := produceRequest(topic, id, partition, acks, records)
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

// brokerClient returns a client that knows every broker of c, so that
// requests can go to one of them (cl.Broker(id)).
func brokerClient(ctx context.Context, t *testing.T, c *brokertest.Cluster) *kgo.Client {
	cl := c.Client()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	return cl
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

// fetchBatches fetches partition 0 of a topic from broker id, from offset
// from up to its high watermark, and returns each batch's CRC by base
// offset and the offset after the last batch. As a consumer it reads from
// the leader (or a stand-in); with asReplica, from any replica's own log,
// as a follower catching up does.
func fetchBatches(ctx context.Context, cl *kgo.Client, id int32, topic string, topicID [16]byte, from int64, asReplica bool) (map[int64]int32, int64, error) {
	out := map[int64]int32{}
	for {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 100, 1, 1<<20
		if asReplica {
			req.ReplicaID, req.ReplicaState.ID = id, id // only the id is checked
		}
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 0, from, 1<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		reqCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := cl.Broker(int(id)).Request(reqCtx, req)
		cancel()
		if err != nil {
			return out, from, err
		}
		fr := resp.(*kmsg.FetchResponse)
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			return out, from, errors.New("fetch answered another partition")
		}
		p := fr.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return out, from, err
		}
		for raw := p.RecordBatches; len(raw) > 0; {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(raw); err != nil {
				break // a partial batch at the end of the response
			}
			out[b.FirstOffset] = b.CRC
			from = b.FirstOffset + int64(b.LastOffsetDelta) + 1
			raw = raw[12+int(b.Length):]
		}
		if from >= p.HighWatermark {
			return out, from, nil
		}
	}
}

type partitionLeader struct {
	id, epoch int32
	code      int16 // the partition's error code
}

// metadataFrom is broker i's Metadata answer for topic: each partition's
// leader, and the brokers it lists.
func metadataFrom(t *testing.T, cl *kgo.Client, i int, topic string) (map[int32]partitionLeader, map[int32]bool) {
	leaders, brokers, err := tryMetadataFrom(cl, i, topic)
	if err != nil {
		t.Fatalf("metadata from broker %d: %v", i, err)
	}
	return leaders, brokers
}

// tryMetadataFrom is metadataFrom for callers that poll: the client may
// not know broker i yet (a broker that has just restarted lists only the
// brokers it has heard from).
func tryMetadataFrom(cl *kgo.Client, i int, topic string) (map[int32]partitionLeader, map[int32]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(i).Request(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	leaders, brokers := map[int32]partitionLeader{}, map[int32]bool{}
	for _, tp := range resp.(*kmsg.MetadataResponse).Topics {
		for _, p := range tp.Partitions {
			leaders[p.Partition] = partitionLeader{p.Leader, p.LeaderEpoch, p.ErrorCode}
		}
	}
	for _, b := range resp.(*kmsg.MetadataResponse).Brokers {
		brokers[b.NodeID] = true
	}
	return leaders, brokers, nil
}
