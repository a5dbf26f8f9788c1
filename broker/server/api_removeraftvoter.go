package server

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/cluster"
)

// RemoveRaftVoter v0 (flexible): takes a leaving broker out of the
// metadata group (kafka-metadata-quorum.sh remove-controller; the
// operator before a scale-in removes a voter's pod). Refused while the
// broker hosts partition replicas, for the last voter, and when the
// voters left would have no live majority (quorum.removeVoter).
func init() { register(kmsg.RemoveRaftVoter, 0, 0, handleRemoveRaftVoter) }

func handleRemoveRaftVoter(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.RemoveRaftVoterRequest)
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
		ctx, cancel := context.WithTimeout(srv.ctx, voterChangeWait)
		defer cancel()
		change := cluster.VoterChange{ClusterID: req.ClusterID, Broker: req.VoterID, Key: req.VoterDirectoryID}
		if err, msg := srv.Quorum.RemoveVoter(ctx, change); err != nil {
			resp.ErrorCode, resp.ErrorMessage = err.Code, kmsg.StringPtr(msg)
		}
		return resp
	}
	return nil, nil
}
