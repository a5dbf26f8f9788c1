package server

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// DescribeUserScramCredentials v0 (flexible): each user's SCRAM
// mechanisms and iterations, never a key (kafka-configs.sh --describe
// --entity-type users). No users named is every user with a credential;
// a user named twice is DUPLICATE_RESOURCE, one without a credential
// RESOURCE_NOT_FOUND.
func init() { register(kmsg.DescribeUserSCRAMCredentials, 0, 0, handleDescribeUserSCRAMCredentials) }

func handleDescribeUserSCRAMCredentials(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if err := r.onCluster(srv, kmsg.ACLOperationDescribe); err != nil {
		resp.ErrorCode, resp.ErrorMessage = err.Code, kmsg.StringPtr(err.Message)
		return resp, nil
	}
	srv.Meta.Read(func(s *meta.State) {
		users := make([]string, 0, len(req.Users))
		for _, u := range req.Users {
			users = append(users, u.Name)
		}
		if len(users) == 0 {
			users = s.ScramUsers()
		}
		for i, user := range users {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.User = user
			creds := s.ScramCredentialsOf(user)
			switch {
			case slices.Contains(users[:i], user) || slices.Contains(users[i+1:], user):
				res.ErrorCode, res.ErrorMessage = kerr.DuplicateResource.Code, kmsg.StringPtr("the user is named more than once")
			case len(creds) == 0:
				res.ErrorCode, res.ErrorMessage = kerr.ResourceNotFound.Code, kmsg.StringPtr("the user has no SCRAM credential")
			}
			if res.ErrorCode == 0 {
				for _, mechanism := range []string{meta.ScramSHA256, meta.ScramSHA512} {
					if c, ok := creds[mechanism]; ok {
						info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
						info.Mechanism, info.Iterations = scramMechanismNumber(mechanism), c.Iterations
						res.CredentialInfos = append(res.CredentialInfos, info)
					}
				}
			}
			resp.Results = append(resp.Results, res)
		}
	})
	return resp, nil
}
