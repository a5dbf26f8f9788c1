package replica

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/security"
)

// A replica recovering from a snapshot fetches the records it lacks from
// the other replicas of its partition with a follower fetch: a Kafka Fetch
// that carries this broker's id as replica id, which any replica answers
// from its own log, leader or not (everything a replica's log holds is
// committed). See partition.StateMachine.RecoverFromSnapshot.

// peerSource is the partition.Source of one partition replica.
type peerSource struct {
	b     *Manager
	shard uint64
}

// Fetch asks the partition's leader first, as it holds every record a
// snapshot it sent names, then the other replicas.
func (p peerSource) Fetch(ctx context.Context, from int64, maxBytes int32) ([]byte, int64, error) {
	var (
		topic    string
		topicID  [16]byte
		index    int32
		replicas []int32
		leader   int32
	)
	p.b.Meta.Read(func(s *meta.State) {
		if t, part := s.PartitionOfShard(p.shard); t != nil {
			topic, topicID, index, leader = t.Name, t.ID, part.Index, part.Leader
			replicas = append(replicas, part.Replicas...)
		}
	})
	if topic == "" {
		return nil, 0, fmt.Errorf("shard %d belongs to no topic", p.shard)
	}
	var errs []error
	for _, peer := range peersLeaderFirst(replicas, leader, p.b.cfg.ID) {
		data, logStart, err := p.b.peers.fetch(ctx, peer, topic, topicID, index, from, maxBytes)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("broker %d: %w", peer, err))
		case len(data) > 0 || logStart > from:
			if err := p.b.throttle.waitFollower(ctx, len(data)); err != nil {
				return nil, 0, err
			}
			return data, logStart, nil
		}
	}
	return nil, 0, errors.Join(errs...)
}

// peersLeaderFirst orders a partition's replicas other than self, its
// leader first.
func peersLeaderFirst(replicas []int32, leader, self int32) []int32 {
	out := make([]int32, 0, len(replicas))
	for _, id := range replicas {
		if id == leader && id != self {
			out = append(out, id)
		}
	}
	for _, id := range replicas {
		if id != leader && id != self {
			out = append(out, id)
		}
	}
	return out
}

// peerClients holds one Kafka client per peer address, made when first
// needed; catching up is rare, so they stay few.
type peerClients struct {
	b      *Manager
	mu     sync.Mutex
	byAddr map[string]*kgo.Client
}

func (c *peerClients) client(id int32) (*kgo.Client, error) {
	br, ok := c.b.Meta.Broker(id)
	if !ok {
		return nil, fmt.Errorf("broker %d is not registered", id)
	}
	addr := net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port)))
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.byAddr[addr]; cl != nil {
		return cl, nil
	}
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(fmt.Sprintf("raftka-broker-%d-catch-up", c.b.cfg.ID)),
		kgo.DialTimeout(5 * time.Second), kgo.RequestRetries(0)}
	if user := c.b.cfg.InterBrokerUser; user != "" {
		// Read at each authentication: a rotated password holds for the
		// next connection.
		opts = append(opts, kgo.SASL(scram.Sha512(func(context.Context) (scram.Auth, error) {
			passwords, err := security.ReadScramUsers(c.b.cfg.ScramUsersDir)
			if err != nil {
				return scram.Auth{}, err
			}
			if passwords[user] == "" {
				return scram.Auth{}, fmt.Errorf("the inter-broker user %s has no password in %s", user, c.b.cfg.ScramUsersDir)
			}
			return scram.Auth{User: user, Pass: passwords[user]}, nil
		})))
	}
	if c.b.cfg.Listeners[0].Protocol.TLS() {
		config, err := c.dialTLS()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(config))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	if c.byAddr == nil {
		c.byAddr = map[string]*kgo.Client{}
	}
	c.byAddr[addr] = cl
	return cl, nil
}

// dialTLS is how a broker dials its peers' SASL_SSL inter-broker
// listener: trusting the certificates of InterBrokerCAFile for the host it
// dials. The file is read for each new client, so a bundle that gained a
// new CA serves the next ones.
func (c *peerClients) dialTLS() (*tls.Config, error) {
	caPEM, err := os.ReadFile(c.b.cfg.InterBrokerCAFile)
	if err != nil {
		return nil, fmt.Errorf("inter-broker CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("inter-broker CA file %s holds no PEM certificate", c.b.cfg.InterBrokerCAFile)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}, nil
}

func (c *peerClients) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, cl := range c.byAddr {
		cl.Close()
		delete(c.byAddr, addr)
	}
}

// fetch is one follower fetch from broker id: the records from offset from
// on, or none and that replica's log start.
func (c *peerClients) fetch(ctx context.Context, id int32, topic string, topicID [16]byte, index int32, from int64, maxBytes int32) ([]byte, int64, error) {
	cl, err := c.client(id)
	if err != nil {
		return nil, 0, err
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = c.b.cfg.ID // up to v14
	req.ReplicaState.ID = c.b.cfg.ID
	req.MaxBytes = maxBytes
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = index, from, maxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	kresp, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return nil, 0, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, 0, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Partition != index {
				continue
			}
			switch err := kerr.ErrorForCode(p.ErrorCode); {
			case err == nil:
				return p.RecordBatches, p.LogStartOffset, nil
			case errors.Is(err, kerr.OffsetOutOfRange):
				return nil, p.LogStartOffset, nil
			default:
				return nil, 0, err
			}
		}
	}
	return nil, 0, errors.New("partition missing from the fetch response")
}
