package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator v0-v4: groups (key type 0) and transactional ids (key
// type 1); v3 flexible; v4 batched. The leader of the metadata group
// coordinates every group and every transactional id.
func init() { register(kmsg.FindCoordinator, 0, 4, handleFindCoordinator) }

func handleFindCoordinator(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.GetVersion() < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID = key, -1
		if err := coordinatorKeyAllowed(srv, r, req.CoordinatorType, key); err != nil {
			c.ErrorCode = err.Code
		} else if id, ok := srv.MetaLeader(); !ok {
			c.ErrorCode = kerr.CoordinatorNotAvailable.Code
		} else if br, known := srv.Meta.Broker(id); !known {
			c.ErrorCode = kerr.CoordinatorNotAvailable.Code
		} else {
			c.Host, c.Port = br.Address(r.conn.listener.Name)
			c.NodeID = br.ID
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.GetVersion() < 4 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
	}
	return resp, nil
}

// coordinatorKeyAllowed is the authorizer's answer for a key: DESCRIBE on
// the group, or on the transactional id.
func coordinatorKeyAllowed(srv *Server, r *request, keyType int8, key string) *kerr.Error {
	switch keyType {
	case 0:
		return r.onGroup(srv, kmsg.ACLOperationDescribe, key)
	case 1:
		if r.allowed(srv, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key) {
			return nil
		}
		return kerr.TransactionalIDAuthorizationFailed
	}
	return kerr.InvalidRequest
}
