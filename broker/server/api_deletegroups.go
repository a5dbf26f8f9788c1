package server

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// DeleteGroups v0-v2: deletes empty groups and their offsets; v2 flexible.
func init() { register(kmsg.DeleteGroups, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	refusal := srv.coordinatorRefusal()
	ctx, cancel := context.WithTimeout(srv.ctx, 10*time.Second)
	defer cancel()
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		denied := r.onGroup(srv, kmsg.ACLOperationDelete, id)
		switch {
		case denied != nil:
			rg.ErrorCode = denied.Code
		case refusal != nil:
			rg.ErrorCode = refusal.Code
		default:
			if err := srv.Groups.Delete(id); err != nil {
				rg.ErrorCode = err.Code
				break
			}
			out, err := srv.Propose(ctx, &meta.Command{DeleteGroup: id})
			if err != nil {
				rg.ErrorCode = kerr.RequestTimedOut.Code
			} else if out.Err != nil {
				rg.ErrorCode = kafkaerr.Code(out.Err)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
