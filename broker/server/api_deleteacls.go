package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/acl"
	"github.com/raftka/raftka/broker/meta"
)

// DeleteAcls v1-3 (v2 on flexible): removes the ACL bindings each filter
// selects (kafka-acls.sh --remove) and answers them per filter. Needs
// ALTER on the cluster; without the authorizer, SECURITY_DISABLED.
func init() { register(kmsg.DeleteACLs, 1, 3, handleDeleteACLs) }

func handleDeleteACLs(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DeleteACLsRequest)
	denied := aclAPIAllowed(srv, r, kmsg.ACLOperationAlter) // in the reader, as CreateAcls
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
		resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
		if denied != nil {
			for i := range resp.Results {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = denied.Code, kmsg.StringPtr(denied.Message)
			}
			return resp
		}
		var matched []acl.Binding
		srv.Meta.Read(func(s *meta.State) {
			for i, f := range req.Filters {
				filter := acl.Filter{ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
					Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType}
				for _, binding := range s.ACLs() {
					if !filter.Matches(binding) {
						continue
					}
					m := kmsg.NewDeleteACLsResponseResultMatchingACL()
					m.ResourceType, m.ResourceName, m.ResourcePatternType = binding.ResourceType, binding.ResourceName, binding.PatternType
					m.Principal, m.Host, m.Operation, m.PermissionType = binding.Principal, binding.Host, binding.Operation, binding.Permission
					resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
					matched = append(matched, binding)
				}
			}
		})
		if len(matched) == 0 {
			return resp
		}
		if err := srv.proposeAdminChange(&meta.Command{DeleteACLs: &meta.DeleteACLs{Bindings: matched}}); err != nil {
			for i := range resp.Results {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = err.Code, kmsg.StringPtr(err.Message)
				resp.Results[i].MatchingACLs = nil
			}
		}
		return resp
	}
	return nil, nil
}
