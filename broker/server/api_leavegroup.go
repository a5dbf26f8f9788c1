package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup v0-v5: v3 batches members by id or instance id, v4 flexible.
func init() { register(kmsg.LeaveGroup, 0, 5, handleLeaveGroup) }

func handleLeaveGroup(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if err := r.onGroup(srv, kmsg.ACLOperationRead, req.Group); err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	if refusal := srv.coordinatorRefusal(); refusal != nil {
		resp.ErrorCode = refusal.Code
		return resp, nil
	}
	members := req.Members
	if req.GetVersion() < 3 {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = req.MemberID
		members = []kmsg.LeaveGroupRequestMember{m}
	}
	groupErr, errs := srv.Groups.Leave(req.Group, members)
	if groupErr != nil {
		resp.ErrorCode = groupErr.Code
		return resp, nil
	}
	for i, m := range members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
		if errs[i] != nil {
			rm.ErrorCode = errs[i].Code
		}
		resp.Members = append(resp.Members, rm)
	}
	if req.GetVersion() < 3 && errs[0] != nil {
		resp.ErrorCode = errs[0].Code
	}
	return resp, nil
}
