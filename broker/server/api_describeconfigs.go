package server

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// DescribeConfigs v0-v4: topics (every supported key, with its source) and
// brokers (read-only settings); v4 flexible.
func init() { register(kmsg.DescribeConfigs, 0, 4, handleDescribeConfigs) }

// httpEndpointConfig is the read-only broker config naming the broker's
// HTTP endpoint.
const httpEndpointConfig = "raftka.http.endpoint"

func handleDescribeConfigs(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, res := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		if err := configsAllowed(srv, r, res.ResourceType, res.ResourceName, kmsg.ACLOperationDescribeConfigs); err != nil {
			rr.ErrorCode, rr.ErrorMessage = err.Code, kmsg.StringPtr(err.Message)
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		wanted := func(name string) bool {
			if res.ConfigNames == nil {
				return true
			}
			for _, n := range res.ConfigNames {
				if n == name {
					return true
				}
			}
			return false
		}
		add := func(name, value string, source kmsg.ConfigSource, readOnly bool) {
			if !wanted(name) {
				return
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.Source, c.ReadOnly = name, kmsg.StringPtr(value), source, readOnly
			c.IsDefault = source == kmsg.ConfigSourceDefaultConfig
			rr.Configs = append(rr.Configs, c)
		}
		switch res.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			var t *meta.Topic
			srv.Meta.Read(func(s *meta.State) {
				if found := s.Topic(res.ResourceName); found != nil {
					cp := *found
					t = &cp
				}
			})
			if t == nil {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			for _, name := range meta.TopicConfigNames() {
				source := kmsg.ConfigSourceDefaultConfig
				if _, set := t.Configs[name]; set {
					source = kmsg.ConfigSourceDynamicTopicConfig
				}
				add(name, t.Value(name), source, false)
			}
		case kmsg.ConfigResourceTypeBroker:
			if res.ResourceName != "" && res.ResourceName != strconv.Itoa(int(srv.cfg.ID)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				break
			}
			src := kmsg.ConfigSourceStaticBrokerConfig
			add("broker.id", strconv.Itoa(int(srv.cfg.ID)), src, true)
			add("auto.create.topics.enable", strconv.FormatBool(srv.cfg.AutoCreateTopics), src, true)
			add("num.partitions", strconv.Itoa(int(srv.cfg.DefaultPartitions)), src, true)
			add("default.replication.factor", strconv.Itoa(int(srv.cfg.DefaultReplicationFactor)), src, true)
			add("log.dirs", srv.cfg.DataDir, src, true)
			// Where the broker's HTTP endpoint (/readyz, /safe-to-restart,
			// /metrics) is reached, for tools that know only its Kafka address.
			add(httpEndpointConfig, srv.cfg.HTTPEndpoint, src, true)
			srv.Meta.Read(func(s *meta.State) {
				flags := map[string]int64{meta.BrokerConfigLeaderThrottledRate: srv.cfg.LeaderThrottledRate,
					meta.BrokerConfigFollowerThrottledRate: srv.cfg.FollowerThrottledRate}
				for _, key := range meta.BrokerConfigNames() {
					value, source := strconv.FormatInt(flags[key], 10), kmsg.ConfigSourceStaticBrokerConfig
					if flags[key] == 0 {
						value, source = "9223372036854775807", kmsg.ConfigSourceDefaultConfig // Kafka's "no bound"
					}
					if v, ok := s.DynamicBrokerConfig(strconv.Itoa(int(srv.cfg.ID)), key); ok {
						value, source = v, kmsg.ConfigSourceDynamicBrokerConfig
					} else if v, ok := s.DynamicBrokerConfig("", key); ok {
						value, source = v, kmsg.ConfigSourceDynamicDefaultBrokerConfig
					}
					add(key, value, source, false)
				}
			})
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}
