package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup v0-v5: v3 static membership, v4 flexible, v5 protocol checks.
func init() { register(kmsg.SyncGroup, 0, 5, handleSyncGroup) }

func handleSyncGroup(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.SyncGroupRequest)
	if err := r.onGroup(srv, kmsg.ACLOperationRead, req.Group); err != nil {
		return &kmsg.SyncGroupResponse{ErrorCode: err.Code}, nil
	}
	if refusal := srv.coordinatorRefusal(); refusal != nil {
		return &kmsg.SyncGroupResponse{ErrorCode: refusal.Code}, nil
	}
	wait := srv.Groups.Sync(req)
	r.deferred = func() kmsg.Response {
		select {
		case resp := <-wait:
			return resp
		case <-srv.ctx.Done():
			return &kmsg.SyncGroupResponse{ErrorCode: kerr.NotCoordinator.Code}
		}
	}
	return nil, nil
}
