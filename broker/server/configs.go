package server

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// configsAllowed is the check of the config APIs: op on the topic, or on
// the cluster for a broker's configs.
func configsAllowed(srv *Server, r *request, rt kmsg.ConfigResourceType, name string, op kmsg.ACLOperation) *kerr.Error {
	if rt == kmsg.ConfigResourceTypeTopic {
		return r.onTopic(srv, op, name)
	}
	return r.onCluster(srv, op)
}

// alterConfigs changes a topic's configs, or broker configs: those of one
// broker, or with an empty name of every broker (meta.BrokerConfigNames).
func (srv *Server) alterConfigs(typ kmsg.ConfigResourceType, ac *meta.AlterConfigs) (int16, *string) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
	case kmsg.ConfigResourceTypeBroker:
		ac.Broker = true
	default:
		return kerr.InvalidRequest.Code, kmsg.StringPtr("only topic and broker configs can be altered")
	}
	// The message names the key and the reason, as Kafka's does; the
	// metadata, which decides, answers only with the code.
	var problem string
	srv.Meta.Read(func(s *meta.State) { problem = s.AlterConfigsProblem(ac) })
	if problem != "" {
		return kerr.InvalidConfig.Code, kmsg.StringPtr(problem)
	}
	ctx, cancel := context.WithTimeout(srv.ctx, 10*time.Second)
	defer cancel()
	out, err := srv.Propose(ctx, &meta.Command{AlterConfigs: ac})
	switch {
	case err != nil:
		return kerr.RequestTimedOut.Code, nil
	case out.Err == kerr.InvalidConfig:
		// Changed meanwhile: the check above passed on an older state.
		var again string
		srv.Meta.Read(func(s *meta.State) { again = s.AlterConfigsProblem(ac) })
		return kerr.InvalidConfig.Code, kmsg.StringPtr(again)
	case out.Err == kerr.InvalidRequest && ac.Broker:
		return kerr.InvalidRequest.Code, kmsg.StringPtr("no broker " + ac.Name)
	case out.Err != nil:
		return kafkaerr.Code(out.Err), nil
	}
	return 0, nil
}
