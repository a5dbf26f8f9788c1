package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// AlterConfigs v0-v2: replaces a topic's whole config set; v2 flexible.
func init() { register(kmsg.AlterConfigs, 0, 2, handleAlterConfigs) }

func handleAlterConfigs(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, res := range req.Resources {
		ac := &meta.AlterConfigs{Name: res.ResourceName, Set: map[string]string{}, Replace: true, ValidateOnly: req.ValidateOnly}
		for _, c := range res.Configs {
			if c.Value != nil {
				ac.Set[c.Name] = *c.Value
			}
		}
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		if err := configsAllowed(srv, r, res.ResourceType, res.ResourceName, kmsg.ACLOperationAlterConfigs); err != nil {
			rr.ErrorCode, rr.ErrorMessage = err.Code, kmsg.StringPtr(err.Message)
		} else {
			rr.ErrorCode, rr.ErrorMessage = srv.alterConfigs(res.ResourceType, ac)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}
