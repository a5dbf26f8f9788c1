package server

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/quota"
)

// AlterClientQuotas v0-1 (v1 flexible): sets and removes quota values of
// users and client ids (kafka-configs.sh --alter --add-config
// producer_byte_rate=...). The byte rates are enforced on each broker;
// other keys (request_percentage, controller_mutation_rate, the ip
// entity's connection_creation_rate) are refused with INVALID_REQUEST
// rather than kept unenforced. Entries are checked one by one; the valid
// ones apply together. Needs ALTER_CONFIGS on the cluster.
func init() { register(kmsg.AlterClientQuotas, 0, 1, handleAlterClientQuotas) }

func handleAlterClientQuotas(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AlterClientQuotasRequest)
	denied := r.onCluster(srv, kmsg.ACLOperationAlterConfigs) // in the reader, as CreateAcls
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		change := &meta.AlterClientQuotas{}
		var validAt []int
		for i, entry := range req.Entries {
			res := kmsg.NewAlterClientQuotasResponseEntry()
			for _, c := range entry.Entity {
				re := kmsg.NewAlterClientQuotasResponseEntryEntity()
				re.Type, re.Name = c.Type, c.Name
				res.Entity = append(res.Entity, re)
			}
			qc, problem := quotaChange(entry)
			switch {
			case denied != nil:
				res.ErrorCode, res.ErrorMessage = denied.Code, kmsg.StringPtr(denied.Message)
			case problem != "":
				res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(problem)
			case !req.ValidateOnly:
				change.Changes = append(change.Changes, qc)
				validAt = append(validAt, i)
			}
			resp.Entries = append(resp.Entries, res)
		}
		if len(change.Changes) > 0 {
			if err := srv.proposeAdminChange(&meta.Command{AlterClientQuotas: change}); err != nil {
				for _, i := range validAt {
					resp.Entries[i].ErrorCode, resp.Entries[i].ErrorMessage = err.Code, kmsg.StringPtr(err.Message)
				}
			}
		}
		return resp
	}
	return nil, nil
}

// quotaChange checks one entry of AlterClientQuotas, as Kafka's broker
// does, and returns the change or what is wrong with it.
func quotaChange(entry kmsg.AlterClientQuotasRequestEntry) (meta.QuotaChange, string) {
	var qc meta.QuotaChange
	if len(entry.Entity) == 0 {
		return qc, "the entity has no component"
	}
	for _, c := range entry.Entity {
		name := &quota.Name{Default: c.Name == nil}
		if c.Name != nil {
			name.Name = *c.Name
		}
		switch {
		case c.Type == quota.EntityUser && qc.Entity.User == nil:
			if c.Name != nil && *c.Name == "" {
				return qc, "a user's name must not be empty"
			}
			qc.Entity.User = name
		case c.Type == quota.EntityClientID && qc.Entity.ClientID == nil:
			qc.Entity.ClientID = name
		case knownEntityType(c.Type):
			return qc, fmt.Sprintf("the entity names %s twice", c.Type)
		default:
			return qc, fmt.Sprintf("entity type %q is not supported: user and client-id are", c.Type)
		}
	}
	seen := map[string]bool{}
	for _, op := range entry.Ops {
		switch {
		case op.Key != quota.ProducerByteRate && op.Key != quota.ConsumerByteRate:
			return qc, fmt.Sprintf("quota %q is not enforced here: producer_byte_rate and consumer_byte_rate are", op.Key)
		case seen[op.Key]:
			return qc, fmt.Sprintf("quota %s is changed twice", op.Key)
		case op.Remove:
			qc.Remove = append(qc.Remove, op.Key)
		case op.Value < 1:
			return qc, fmt.Sprintf("quota %s must be at least 1 byte/s", op.Key)
		default:
			if qc.Set == nil {
				qc.Set = map[string]float64{}
			}
			qc.Set[op.Key] = op.Value
		}
		seen[op.Key] = true
	}
	return qc, ""
}
