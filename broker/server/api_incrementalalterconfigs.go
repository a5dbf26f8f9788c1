package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// IncrementalAlterConfigs v0-v1: set and delete of topic configs and of
// the broker configs that can change at run time (the replication
// throttles); append and subtract apply to list-valued configs, which
// there are none of; v1 flexible.
func init() { register(kmsg.IncrementalAlterConfigs, 0, 1, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, res := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		ac := &meta.AlterConfigs{Name: res.ResourceName, Set: map[string]string{}, ValidateOnly: req.ValidateOnly}
		for _, c := range res.Configs {
			switch c.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				if c.Value != nil {
					ac.Set[c.Name] = *c.Value
				}
			case kmsg.IncrementalAlterConfigOpDelete:
				ac.Delete = append(ac.Delete, c.Name)
			default:
				rr.ErrorCode, rr.ErrorMessage = kerr.InvalidConfig.Code, kmsg.StringPtr(c.Name+" is not a list config: use SET or DELETE")
			}
		}
		if err := configsAllowed(srv, r, res.ResourceType, res.ResourceName, kmsg.ACLOperationAlterConfigs); err != nil {
			rr.ErrorCode, rr.ErrorMessage = err.Code, kmsg.StringPtr(err.Message)
		}
		if rr.ErrorCode == 0 {
			rr.ErrorCode, rr.ErrorMessage = srv.alterConfigs(res.ResourceType, ac)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}
