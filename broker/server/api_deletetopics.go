package server

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// DeleteTopics v0-v6: v4 flexible; v6 names topics by name or id.
func init() { register(kmsg.DeleteTopics, 0, 6, handleDeleteTopics) }

func handleDeleteTopics(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	topics := req.Topics
	if req.GetVersion() < 6 {
		topics = nil
		for _, name := range req.TopicNames {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = kmsg.StringPtr(name)
			topics = append(topics, t)
		}
	}
	ctx, cancel := context.WithTimeout(srv.ctx, adminTimeout(req.TimeoutMillis, 60*time.Second))
	defer cancel()
	for _, t := range topics {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		} else {
			var known bool
			if name, known = srv.Meta.TopicName(t.TopicID); !known {
				rt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			rt.Topic = kmsg.StringPtr(name)
		}
		if err := r.onTopic(srv, kmsg.ACLOperationDelete, name); err != nil {
			rt.ErrorCode = err.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		out, err := srv.Propose(ctx, &meta.Command{DeleteTopic: name})
		switch {
		case err != nil:
			rt.ErrorCode = kerr.RequestTimedOut.Code
		case out.Err != nil:
			rt.ErrorCode = kafkaerr.Code(out.Err)
		default:
			rt.TopicID = out.Topic.ID
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
