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
		rr.ErrorCode, rr.ErrorMessage = b.alterTopicConfigs(res.ResourceType, ac)
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

func (b *Broker) alterTopicConfigs(typ kmsg.ConfigResourceType, ac *meta.AlterConfigs) (int16, *string) {
	if typ != kmsg.ConfigResourceTypeTopic {
		return kerr.InvalidRequest.Code, kmsg.StringPtr("only topic configs can be altered")
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	out, err := b.proposeMeta(ctx, &meta.Command{AlterConfigs: ac})
	switch {
	case err != nil:
		return kerr.RequestTimedOut.Code, nil
	case out.Err == kerr.InvalidConfig:
		return kerr.InvalidConfig.Code, kmsg.StringPtr("unknown topic config, or a value out of range (supported: see DescribeConfigs)")
	case out.Err != nil:
		return errCode(out.Err), nil
	}
	return 0, nil
}
