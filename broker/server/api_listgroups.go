package server

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/groups"
	"github.com/raftka/raftka/broker/meta"
)

// ListGroups v0-v4: v3 flexible, v4 filters by state.
func init() { register(kmsg.ListGroups, 0, 4, handleListGroups) }

func handleListGroups(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if !srv.isCoordinator() {
		// Only the coordinator knows the groups; others answer with none,
		// as a Kafka broker without group partitions does.
		return resp, nil
	}
	all := srv.Groups.List()
	srv.Meta.Read(func(s *meta.State) {
		for _, id := range s.GroupsWithOffsets() {
			if _, live := all[id]; !live {
				all[id] = [2]string{groups.StateEmpty, "consumer"}
			}
		}
	})
	ids := make([]string, 0, len(all))
	for id := range all {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	everyGroup := r.onCluster(srv, kmsg.ACLOperationDescribe) == nil
	for _, id := range ids {
		if !everyGroup && r.onGroup(srv, kmsg.ACLOperationDescribe, id) != nil {
			continue // Kafka lists the groups the client may describe
		}
		st := all[id]
		if len(req.StatesFilter) > 0 && !contains(req.StatesFilter, st[0]) {
			continue
		}
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.GroupState, g.ProtocolType = id, st[0], st[1]
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
