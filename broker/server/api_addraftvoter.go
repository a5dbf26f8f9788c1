package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/cluster"
)

// AddRaftVoter v0-1 (flexible): makes a running broker a voter of the
// metadata group (kafka-metadata-quorum.sh add-controller; the operator
// when the cluster grows to its voter count). The broker must have joined
// as an observer; a directory id, when given, must be its current
// incarnation. The answer comes once the change is committed, whatever
// AckWhenCommitted says: the membership change is one Raft entry.
func init() { register(kmsg.AddRaftVoter, 0, 1, handleAddRaftVoter) }

// voterChangeWait bounds one voter change: a record and a membership
// change, each a commit of the metadata group.
const voterChangeWait = 15 * time.Second

func handleAddRaftVoter(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AddRaftVoterRequest)
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
		ctx, cancel := context.WithTimeout(srv.ctx, voterChangeWait)
		defer cancel()
		change := cluster.VoterChange{ClusterID: req.ClusterID, Broker: req.VoterID, Key: req.VoterDirectoryID}
		if err, msg := srv.Quorum.AddVoter(ctx, change); err != nil {
			resp.ErrorCode, resp.ErrorMessage = err.Code, kmsg.StringPtr(msg)
		}
		return resp
	}
	return nil, nil
}
