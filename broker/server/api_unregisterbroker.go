package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// UnregisterBroker v0 (flexible): forgets a broker that left the cluster
// for good (kafka-cluster.sh unregister --id N; the operator after a
// scale-in), so that no new partition is placed on it. Refused while the
// broker answers (it is running), while it holds a partition replica
// (move them first), and for a voter of the metadata group, whose quorum
// counts it. Its node in the metadata group, an observer, is removed; a
// broker given the id again joins as a new incarnation with a later
// generation, so the node is never reused.
func init() { register(kmsg.UnregisterBroker, 0, 0, handleUnregisterBroker) }

const unregisterBrokerWait = 10 * time.Second

func handleUnregisterBroker(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.UnregisterBrokerRequest)
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
		ctx, cancel := context.WithTimeout(srv.ctx, unregisterBrokerWait)
		defer cancel()
		if err, msg := srv.unregisterBroker(ctx, req.BrokerID); err != nil {
			resp.ErrorCode, resp.ErrorMessage = err.Code, kmsg.StringPtr(msg)
		}
		return resp
	}
	return nil, nil
}

func (srv *Server) unregisterBroker(ctx context.Context, id int32) (*kerr.Error, string) {
	mem, err := srv.Raft.SyncGetClusterMembership(ctx, meta.MetadataShard)
	if err != nil {
		return kerr.RequestTimedOut, "the metadata group did not answer: " + err.Error()
	}
	br, known := srv.Meta.Broker(id)
	node := br.Node()
	if !known {
		// A retry after the metadata forgot it: its node may be left.
		if err := srv.removeMetadataNodesOf(ctx, id, mem.Observers, mem.ConfigChangeID); err != nil {
			return kerr.RequestTimedOut, err.Error()
		}
		return kerr.BrokerIDNotRegistered, fmt.Sprintf("broker %d is not registered", id)
	}
	if id == srv.cfg.ID || srv.Liveness.IsLive(id) {
		return kerr.InvalidRequest, fmt.Sprintf("broker %d is running: stop it first", id)
	}
	if _, voter := mem.Nodes[node]; voter {
		return kerr.InvalidRequest, fmt.Sprintf("broker %d votes in the metadata group: a voter stays registered", id)
	}
	out, err := srv.Propose(ctx, &meta.Command{UnregisterBroker: &meta.UnregisterBroker{ID: id}})
	switch {
	case err != nil:
		return kerr.RequestTimedOut, "the metadata group did not take the change: " + err.Error()
	case errors.Is(out.Err, kerr.InvalidRequest):
		return kerr.InvalidRequest, fmt.Sprintf("broker %d still holds partition replicas: move them to other brokers first", id)
	case out.Err != nil:
		return kafkaerr.Of(out.Err, kerr.UnknownServerError), out.Err.Error()
	}
	srv.Log.Info("broker unregistered", "unregistered", id, "generation", meta.EpochOfNode(node))
	if err := srv.removeMetadataNodesOf(ctx, id, mem.Observers, mem.ConfigChangeID); err != nil {
		return kerr.RequestTimedOut, err.Error()
	}
	return nil, ""
}

// removeMetadataNodesOf removes a broker's observer nodes from the
// metadata group.
func (srv *Server) removeMetadataNodesOf(ctx context.Context, id int32, observers map[uint64]string, ccid uint64) error {
	for n := range observers {
		if meta.BrokerOfNode(n) != id {
			continue
		}
		if err := srv.Raft.SyncRequestDeleteNode(ctx, meta.MetadataShard, n, ccid); err != nil {
			return fmt.Errorf("remove broker %d's node from the metadata group: %w", id, err)
		}
		mem, err := srv.Raft.SyncGetClusterMembership(ctx, meta.MetadataShard)
		if err != nil {
			return err
		}
		ccid = mem.ConfigChangeID
	}
	return nil
}
