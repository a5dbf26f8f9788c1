package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// DescribeCluster v0-v2: the live brokers and the controller (the metadata
// leader), to any client, and what it may do on the cluster when asked
// (KIP-430); flexible from v0. v2 with IncludeFencedBrokers lists the
// registered brokers that do not answer too, fenced, as Kafka lists the
// brokers whose registration lapsed.
func init() { register(kmsg.DescribeCluster, 0, 2, handleDescribeCluster) }

func handleDescribeCluster(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID = ClusterID
	// Any client may list the brokers, as from Metadata; DESCRIBE on the
	// cluster only decides whether it learns its operations there.
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = r.clusterOperations(srv)
	}
	resp.ControllerID = -1
	if id, ok := srv.MetaLeader(); ok {
		resp.ControllerID = id
	}
	srv.Meta.Read(func(s *meta.State) {
		for _, br := range s.Brokers() {
			live := srv.Liveness.IsLive(br.ID)
			if !live && !req.IncludeFencedBrokers {
				continue
			}
			rb := kmsg.NewDescribeClusterResponseBroker()
			rb.Host, rb.Port = br.Address(r.conn.listener.Name)
			rb.NodeID, rb.IsFenced = br.ID, !live
			if br.Rack != "" {
				rb.Rack = kmsg.StringPtr(br.Rack)
			}
			resp.Brokers = append(resp.Brokers, rb)
		}
	})
	return resp, nil
}
