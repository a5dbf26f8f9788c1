package server

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup v0-v9: v4 asks new members to rejoin with an assigned id
// (KIP-394), v5 static membership, v6 flexible.
func init() { register(kmsg.JoinGroup, 0, 9, handleJoinGroup) }

func handleJoinGroup(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.JoinGroupRequest)
	if err := r.onGroup(srv, kmsg.ACLOperationRead, req.Group); err != nil {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation = err.Code, -1
		return resp, nil
	}
	if refusal := srv.coordinatorRefusal(); refusal != nil {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation = refusal.Code, -1
		return resp, nil
	}
	host, _, _ := net.SplitHostPort(r.conn.nc.RemoteAddr().String())
	wait := srv.Groups.Join(req, r.clientID, "/"+host)
	r.deferred = func() kmsg.Response {
		select {
		case resp := <-wait:
			return resp
		case <-srv.ctx.Done():
			return &kmsg.JoinGroupResponse{ErrorCode: kerr.NotCoordinator.Code, Generation: -1}
		}
	}
	return nil, nil
}
