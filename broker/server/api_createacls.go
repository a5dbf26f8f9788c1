package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/acl"
	"github.com/raftka/raftka/broker/meta"
)

// CreateAcls v1-3 (v2 on flexible): adds ACL bindings (kafka-acls.sh
// --add), each checked (INVALID_REQUEST says what is wrong with one).
// Needs ALTER on the cluster; without the authorizer,
// SECURITY_DISABLED.
func init() { register(kmsg.CreateACLs, 1, 3, handleCreateACLs) }

const aclChangeWait = 10 * time.Second

func handleCreateACLs(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.CreateACLsRequest)
	// Asked here, in the connection's reader, which alone touches its
	// authentication; the proposal waits in the deferred part.
	denied := aclAPIAllowed(srv, r, kmsg.ACLOperationAlter)
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
		resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
		var valid []acl.Binding
		var validAt []int
		for i, c := range req.Creations {
			res := &resp.Results[i]
			res.Default()
			binding := acl.Binding{ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
				Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType}
			if denied != nil {
				res.ErrorCode, res.ErrorMessage = denied.Code, kmsg.StringPtr(denied.Message)
				continue
			}
			if problem := binding.Valid(); problem != "" {
				res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(problem)
				continue
			}
			valid, validAt = append(valid, binding), append(validAt, i)
		}
		if len(valid) > 0 {
			if err := srv.proposeAdminChange(&meta.Command{CreateACLs: &meta.CreateACLs{Bindings: valid}}); err != nil {
				for _, i := range validAt {
					resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = err.Code, kmsg.StringPtr(err.Message)
				}
			}
		}
		return resp
	}
	return nil, nil
}
