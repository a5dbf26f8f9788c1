package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/groups"
)

// DescribeGroups v0-v5: v3 what the client may do on the group (KIP-430),
// v4 instance ids, v5 flexible. A group known only by
// its committed offsets is Empty.
func init() { register(kmsg.DescribeGroups, 0, 5, handleDescribeGroups) }

func handleDescribeGroups(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	refusal := srv.coordinatorRefusal()
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		if err := r.onGroup(srv, kmsg.ACLOperationDescribe, id); err != nil {
			rg.ErrorCode = err.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if refusal != nil {
			rg.ErrorCode = refusal.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		d, ok := srv.Groups.Describe(id)
		if !ok {
			d = groups.Description{State: groups.StateDead}
			if srv.Meta.HasGroupOffsets(id) {
				d.State = groups.StateEmpty
			}
		}
		rg.State, rg.ProtocolType, rg.Protocol = d.State, d.ProtocolType, d.Protocol
		if req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = authorizedOperations(kmsg.ACLResourceTypeGroup, func(op kmsg.ACLOperation) bool {
				return r.allowed(srv, op, kmsg.ACLResourceTypeGroup, id)
			})
		}
		for _, m := range d.Members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID, rm.ClientID, rm.ClientHost = m.ID, m.ClientID, m.Host
			if m.InstanceID != "" {
				rm.InstanceID = kmsg.StringPtr(m.InstanceID)
			}
			rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
