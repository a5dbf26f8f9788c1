package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// AlterConfigs v0-v2: replaces a topic's whole config set; v2 flexible.
func init() { register(kmsg.AlterConfigs, 0, 2, handleAlterConfigs) }

func handleAlterConfigs(b *Broker, r *request) (kmsg.Response, error) {
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
		if err := configsAllowed(b, r, res.ResourceType, res.ResourceName, kmsg.ACLOperationAlterConfigs); err != nil {
			rr.ErrorCode, rr.ErrorMessage = err.Code, kmsg.StringPtr(err.Message)
		} else {
			rr.ErrorCode, rr.ErrorMessage = b.alterConfigs(res.ResourceType, ac)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

// alterConfigs changes a topic's configs, or broker configs: those of one
// broker, or with an empty name of every broker (meta.BrokerConfigNames).
func (b *Broker) alterConfigs(typ kmsg.ConfigResourceType, ac *meta.AlterConfigs) (int16, *string) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
	case kmsg.ConfigResourceTypeBroker:
		ac.Broker = true
	default:
		return kerr.InvalidRequest.Code, kmsg.StringPtr("only topic and broker configs can be altered")
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	out, err := b.proposeMeta(ctx, &meta.Command{AlterConfigs: ac})
	switch {
	case err != nil:
		return kerr.RequestTimedOut.Code, nil
	case out.Err == kerr.InvalidConfig && ac.Broker:
		return kerr.InvalidConfig.Code, kmsg.StringPtr("broker configs that can be set: leader.replication.throttled.rate and follower.replication.throttled.rate, in bytes per second")
	case out.Err == kerr.InvalidConfig:
		return kerr.InvalidConfig.Code, kmsg.StringPtr("unknown topic config, or a value out of range (supported: see DescribeConfigs)")
	case out.Err == kerr.InvalidRequest && ac.Broker:
		return kerr.InvalidRequest.Code, kmsg.StringPtr("no broker " + ac.Name)
	case out.Err != nil:
		return errCode(out.Err), nil
	}
	return 0, nil
}
