package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat v0-v4: v3 static membership, v4 flexible.
func init() { register(kmsg.Heartbeat, 0, 4, handleHeartbeat) }

func handleHeartbeat(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if err := r.onGroup(srv, kmsg.ACLOperationRead, req.Group); err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	if refusal := srv.coordinatorRefusal(); refusal != nil {
		resp.ErrorCode = refusal.Code
		return resp, nil
	}
	if err := srv.Groups.Heartbeat(req); err != nil {
		resp.ErrorCode = err.Code
	}
	return resp, nil
}
