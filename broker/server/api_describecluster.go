package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// DescribeCluster v0-v1: the live brokers and the controller (the metadata
// leader); flexible from v0.
func init() { register(kmsg.DescribeCluster, 0, 1, handleDescribeCluster) }

func handleDescribeCluster(b *Broker, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID = ClusterID
	resp.ControllerID = -1
	if id, ok := b.metaLeader(); ok {
		resp.ControllerID = id
	}
	b.meta.Read(func(s *meta.State) {
		for _, id := range s.BrokerIDs() {
			if !b.liveness.isLive(id) {
				continue
			}
			br := s.Brokers[id]
			rb := kmsg.NewDescribeClusterResponseBroker()
			rb.NodeID, rb.Host, rb.Port = br.ID, br.Host, br.Port
			if br.Rack != "" {
				rb.Rack = kmsg.StringPtr(br.Rack)
			}
			resp.Brokers = append(resp.Brokers, rb)
		}
	})
	return resp, nil
}
