package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/acl"
	"github.com/raftka/raftka/broker/meta"
)

// DescribeAcls v1-3 (v2 on flexible): the ACL bindings a filter selects
// (kafka-acls.sh --list), grouped by resource pattern. Needs DESCRIBE on
// the cluster; without the authorizer, SECURITY_DISABLED.
func init() { register(kmsg.DescribeACLs, 1, 3, handleDescribeACLs) }

func handleDescribeACLs(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if err := aclAPIAllowed(srv, r, kmsg.ACLOperationDescribe); err != nil {
		resp.ErrorCode, resp.ErrorMessage = err.Code, kmsg.StringPtr(err.Message)
		return resp, nil
	}
	f := acl.Filter{ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType}
	srv.Meta.Read(func(s *meta.State) {
		for _, binding := range s.ACLs() {
			if !f.Matches(binding) {
				continue
			}
			i := len(resp.Resources) - 1
			for ; i >= 0; i-- {
				res := resp.Resources[i]
				if res.ResourceType == binding.ResourceType && res.ResourceName == binding.ResourceName && res.ResourcePatternType == binding.PatternType {
					break
				}
			}
			if i < 0 {
				res := kmsg.NewDescribeACLsResponseResource()
				res.ResourceType, res.ResourceName, res.ResourcePatternType = binding.ResourceType, binding.ResourceName, binding.PatternType
				resp.Resources = append(resp.Resources, res)
				i = len(resp.Resources) - 1
			}
			a := kmsg.NewDescribeACLsResponseResourceACL()
			a.Principal, a.Host, a.Operation, a.PermissionType = binding.Principal, binding.Host, binding.Operation, binding.Permission
			resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
		}
	})
	return resp, nil
}
