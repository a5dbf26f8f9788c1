package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// DeleteGroups v0-v2: deletes empty groups and their offsets; v2 flexible.
func init() { register(kmsg.DeleteGroups, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(b *Broker, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	coordinator := b.isCoordinator()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		denied := r.onGroup(b, kmsg.ACLOperationDelete, id)
		switch {
		case denied != nil:
			rg.ErrorCode = denied.Code
		case !coordinator:
			rg.ErrorCode = kerr.NotCoordinator.Code
		default:
			if err := b.groups.Delete(id); err != nil {
				rg.ErrorCode = err.Code
				break
			}
			out, err := b.proposeMeta(ctx, &meta.Command{DeleteGroup: id})
			if err != nil {
				rg.ErrorCode = kerr.RequestTimedOut.Code
			} else if out.Err != nil {
				rg.ErrorCode = errCode(out.Err)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
