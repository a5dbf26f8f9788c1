package integration

import (
	"context"
	"fmt"
	"maps"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

// A broker that does not lead a partition answers Produce and Fetch with
// NOT_LEADER_OR_FOLLOWER and names the leader and its endpoint (KIP-951), so
// a client redirects without a metadata refresh. Both by topic id (Produce
// v13, Fetch v13+), which franz-go uses against these brokers.
func TestNotLeaderNamesTheLeader(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("hints", 1, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	details, err := c.Admin().ListTopics(ctx, "hints")
	if err != nil {
		t.Fatal(err)
	}
	topicID := [16]byte(details["hints"].ID)
	// The leader balancer hands a new partition's leadership to its
	// preferred replica: wait for that, or the follower asked below may
	// have just become the leader.
	waitFor(t, 30*time.Second, "leadership on the preferred replica", func() bool {
		md, err := c.Admin().Metadata(ctx, "hints")
		if err != nil {
			return false
		}
		p := md.Topics["hints"].Partitions[0]
		return len(p.Replicas) > 0 && p.Leader == p.Replicas[0]
	})
	cl := c.Client()
	produce := produceRequest("hints", topicID, 0, -1, batch(-1, -1, 0, "x"))
	produce.TimeoutMillis = 5000
	var (
		leader   int
		follower int32
		presp    *kmsg.ProduceResponse
		p        kmsg.ProduceResponseTopicPartition
	)
	// A busy machine may move the leadership (a missed heartbeat) between
	// asking who leads and asking a follower, and a broker learns of a move
	// from the new leader's first message, a heartbeat or so later than the
	// broker that answered the metadata request: the follower's answer must
	// come to name the leader of the moment, so it is asked until it does,
	// for at most 10 s.
	deadline := time.Now().Add(10 * time.Second)
	for {
		leader = c.LeaderOf("hints", 0)
		follower = int32((leader + 1) % 3)
		presp, err = produce.RequestWith(ctx, cl.Broker(int(follower)))
		if err != nil {
			t.Fatal(err)
		}
		p = presp.Topics[0].Partitions[0]
		if (p.ErrorCode == kerr.NotLeaderForPartition.Code && p.CurrentLeader.LeaderID == int32(leader)) || time.Now().After(deadline) {
			break
		}
		t.Logf("broker %d answered error %d naming leader %d where the metadata names %d; asking again", follower, p.ErrorCode, p.CurrentLeader.LeaderID, leader)
		time.Sleep(200 * time.Millisecond)
	}
	host, port, _ := net.SplitHostPort(c.AllAddrs()[leader])
	wantPort, _ := strconv.Atoi(port)
	if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != int32(leader) || p.CurrentLeader.LeaderEpoch < 1 {
		t.Fatalf("produce v%d to a follower: error %d, current leader %+v; want NOT_LEADER_OR_FOLLOWER naming %d", presp.Version, p.ErrorCode, p.CurrentLeader, leader)
	}
	if len(presp.Brokers) != 1 || presp.Brokers[0].NodeID != int32(leader) || presp.Brokers[0].Host != host || int(presp.Brokers[0].Port) != wantPort {
		t.Fatalf("produce response endpoints %+v, want broker %d at %s", presp.Brokers, leader, c.AllAddrs()[leader])
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis = 10
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "hints", topicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	unknown := kmsg.NewFetchRequestTopic()
	unknown.Topic, unknown.TopicID = "no-such-topic", [16]byte{1, 2, 3}
	unknown.Partitions = append(unknown.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft, unknown)
	fresp, err := fetch.RequestWith(ctx, cl.Broker(int(follower)))
	if err != nil {
		t.Fatal(err)
	}
	if fresp.Version < 13 {
		t.Fatalf("fetch negotiated v%d, want topic ids (v13+)", fresp.Version)
	}
	f := fresp.Topics[0].Partitions[0]
	if fresp.Topics[0].TopicID != topicID || f.ErrorCode != kerr.NotLeaderForPartition.Code || f.CurrentLeader.LeaderID != int32(leader) {
		t.Fatalf("fetch v%d from a follower: topic %x error %d current leader %+v", fresp.Version, fresp.Topics[0].TopicID, f.ErrorCode, f.CurrentLeader)
	}
	if len(fresp.Brokers) != 1 || fresp.Brokers[0].NodeID != int32(leader) || int(fresp.Brokers[0].Port) != wantPort {
		t.Fatalf("fetch response endpoints %+v, want broker %d", fresp.Brokers, leader)
	}
	if code := fresp.Topics[1].Partitions[0].ErrorCode; code != kerr.UnknownTopicID.Code {
		t.Fatalf("fetch of an unknown topic id: error %d, want UNKNOWN_TOPIC_ID", code)
	}
}

// TestNewPartitionsStartOnTheirPreferredReplicas: as with Kafka's
// controller, a partition is led by its preferred replica (the first one
// listed) when CreateTopics or CreatePartitions answers, so leadership does
// not move under a client that starts using the topic right away (KafkaJS,
// for one, rejoins its group on every NOT_LEADER_OR_FOLLOWER from a fetch).
// Every broker is asked, since a client asks any of them; one whose
// metadata replica has not applied the last change yet gets a moment
// (metadataApplyLag), far less than a leader-balancing round, which would
// otherwise have made the preferred replicas lead.
func TestNewPartitionsStartOnTheirPreferredReplicas(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := c.Admin()
	cl := c.Client()
	type leadership struct{ leader, epoch int32 }
	const metadataApplyLag = 500 * time.Millisecond
	// requirePreferredLeaders returns each partition's leader and epoch as
	// every broker names them.
	requirePreferredLeaders := func(when string, partitions int) map[int32]leadership {
		t.Helper()
		var agreed map[int32]leadership
		for _, b := range c.Brokers {
			var problem string
			seen := map[int32]leadership{}
			for deadline := time.Now().Add(metadataApplyLag); ; {
				problem = ""
				req := kmsg.NewPtrMetadataRequest()
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr("fresh")
				req.Topics = append(req.Topics, rt)
				resp, err := req.RequestWith(ctx, cl.Broker(int(b.ID)))
				if err != nil {
					t.Fatal(err)
				}
				parts := resp.Topics[0].Partitions
				if len(parts) != partitions {
					problem = fmt.Sprintf("%d partitions, want %d", len(parts), partitions)
				}
				for _, p := range parts {
					seen[p.Partition] = leadership{p.Leader, p.LeaderEpoch}
					if problem == "" && (len(p.Replicas) == 0 || p.Leader != p.Replicas[0]) {
						problem = fmt.Sprintf("partition %d led by %d (epoch %d), replicas %v", p.Partition, p.Leader, p.LeaderEpoch, p.Replicas)
					}
				}
				if problem == "" || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if problem != "" {
				t.Fatalf("%s, broker %d: %s", when, b.ID, problem)
			}
			if agreed != nil && !maps.Equal(agreed, seen) {
				t.Fatalf("%s: brokers disagree on leaders and epochs: %v and %v", when, agreed, seen)
			}
			agreed = seen
		}
		return agreed
	}
	if _, err := adm.CreateTopic(ctx, 9, 3, nil, "fresh"); err != nil {
		t.Fatal(err)
	}
	requirePreferredLeaders("when CreateTopics answered", 9)
	if _, err := adm.CreatePartitions(ctx, 3, "fresh"); err != nil {
		t.Fatal(err)
	}
	answered := requirePreferredLeaders("when CreatePartitions answered", 12)
	time.Sleep(6 * time.Second) // a leader-balancing round: nothing moves
	if later := requirePreferredLeaders("6 s later", 12); !maps.Equal(answered, later) {
		t.Fatalf("leadership moved after CreatePartitions answered: %v, then %v", answered, later)
	}
}
