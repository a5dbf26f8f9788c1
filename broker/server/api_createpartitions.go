package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// CreatePartitions v0-v3: grows a topic; v2 flexible. Manual assignment of
// the new partitions is refused, as in CreateTopics.
func init() { register(kmsg.CreatePartitions, 0, 3, handleCreatePartitions) }

func handleCreatePartitions(b *Broker, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.CreatePartitionsRequest)
	timeout := min(max(time.Duration(req.TimeoutMillis)*time.Millisecond, time.Second), 60*time.Second)
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		ctx, cancel := context.WithTimeout(b.ctx, timeout)
		defer cancel()
		var grown []string
		for _, t := range req.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = t.Topic
			if len(t.Assignment) > 0 {
				rt.ErrorCode, rt.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("manual replica assignment is not supported")
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			out, err := b.proposeMeta(ctx, &meta.Command{CreatePartitions: &meta.CreatePartitions{Name: t.Topic, Count: t.Count, ValidateOnly: req.ValidateOnly}})
			switch {
			case err != nil:
				rt.ErrorCode = kerr.RequestTimedOut.Code
			case out.Err != nil:
				rt.ErrorCode = errCode(out.Err)
				if out.Err == kerr.InvalidPartitions {
					rt.ErrorMessage = kmsg.StringPtr("the partition count can only grow")
				}
			default:
				grown = append(grown, t.Topic)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		b.awaitLeaders(ctx, grown)
		return resp
	}
	return nil, nil
}
