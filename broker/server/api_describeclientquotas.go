package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/quota"
)

// DescribeClientQuotas v0-1 (v1 flexible): the quota configs whose
// entities match the filter (kafka-configs.sh --describe --entity-type
// users|clients). Each component matches a name, the default, or any;
// strict leaves out entities with components the filter does not name.
// Needs DESCRIBE_CONFIGS on the cluster.
func init() { register(kmsg.DescribeClientQuotas, 0, 1, handleDescribeClientQuotas) }

func handleDescribeClientQuotas(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if err := r.onCluster(srv, kmsg.ACLOperationDescribeConfigs); err != nil {
		resp.ErrorCode, resp.ErrorMessage = err.Code, kmsg.StringPtr(err.Message)
		return resp, nil
	}
	filters := map[string]kmsg.DescribeClientQuotasRequestComponent{}
	for _, c := range req.Components {
		if _, twice := filters[c.EntityType]; twice || !knownEntityType(c.EntityType) || c.MatchType > 2 || c.MatchType == 0 && c.Match == nil {
			resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("each filter component names user or client-id once, with a name to match exactly")
			return resp, nil
		}
		filters[c.EntityType] = c
	}
	srv.Meta.Read(func(s *meta.State) {
		for _, q := range s.ClientQuotas() {
			if !quotaEntityMatches(q.Entity, filters, req.Strict) {
				continue
			}
			e := kmsg.NewDescribeClientQuotasResponseEntry()
			for _, c := range entityComponents(q.Entity) {
				ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
				ee.Type, ee.Name = c.kind, c.name
				e.Entity = append(e.Entity, ee)
			}
			for _, k := range []string{quota.ProducerByteRate, quota.ConsumerByteRate} {
				if v, ok := q.Values[k]; ok {
					ev := kmsg.NewDescribeClientQuotasResponseEntryValue()
					ev.Key, ev.Value = k, v
					e.Values = append(e.Values, ev)
				}
			}
			resp.Entries = append(resp.Entries, e)
		}
	})
	return resp, nil
}

// entityComponent is one component of an entity as Kafka's APIs carry it:
// a type and a name, nil for the default.
type entityComponent struct {
	kind string
	name *string
}

func entityComponents(e quota.Entity) []entityComponent {
	var out []entityComponent
	for _, c := range []struct {
		kind string
		name *quota.Name
	}{{quota.EntityUser, e.User}, {quota.EntityClientID, e.ClientID}} {
		switch {
		case c.name == nil:
		case c.name.Default:
			out = append(out, entityComponent{kind: c.kind})
		default:
			out = append(out, entityComponent{kind: c.kind, name: kmsg.StringPtr(c.name.Name)})
		}
	}
	return out
}

// quotaEntityMatches applies a DescribeClientQuotas filter.
func quotaEntityMatches(e quota.Entity, filters map[string]kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	for kind, name := range map[string]*quota.Name{quota.EntityUser: e.User, quota.EntityClientID: e.ClientID} {
		f, filtered := filters[kind]
		switch {
		case !filtered:
			if strict && name != nil {
				return false
			}
		case name == nil:
			return false
		case f.MatchType == 0 && (name.Default || name.Name != *f.Match):
			return false
		case f.MatchType == 1 && !name.Default:
			return false
		}
	}
	return true
}
