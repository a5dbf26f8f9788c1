package groups

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func joinError(err *kerr.Error, memberID string) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.ErrorCode, resp.MemberID, resp.Generation = err.Code, memberID, -1
	return resp
}

func immediate[T any](v T) <-chan T {
	ch := make(chan T, 1)
	ch <- v
	return ch
}

// Join handles JoinGroup. The response arrives on the channel when the join
// phase completes, which may take until the rebalance timeout.
func (c *Coordinator) Join(req *kmsg.JoinGroupRequest, clientID, host string) <-chan *kmsg.JoinGroupResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.GetVersion() == 0 {
		rebalance = session
	}
	if req.Group == "" {
		return immediate(joinError(kerr.InvalidGroupID, req.MemberID))
	}
	if session < MinSessionTimeout || session > MaxSessionTimeout {
		return immediate(joinError(kerr.InvalidSessionTimeout, req.MemberID))
	}
	g := c.groupFor(req.Group, true)
	if !compatible(g, req.ProtocolType, req.Protocols) || len(req.Protocols) == 0 {
		return immediate(joinError(kerr.InconsistentGroupProtocol, req.MemberID))
	}
	instanceID := ""
	if req.InstanceID != nil {
		instanceID = *req.InstanceID
	}
	var m *member
	switch {
	case req.MemberID == "" && instanceID != "" && g.statics[instanceID] != "":
		// A static member restarted: it takes over its old identity and,
		// if nothing about it changed, its assignment without a rebalance.
		oldID := g.statics[instanceID]
		m = g.members[oldID]
		failMember(m, kerr.FencedInstanceID)
		delete(g.members, oldID)
		m.id = newMemberID(clientID)
		g.members[m.id] = m
		g.statics[instanceID] = m.id
		for i, id := range g.order {
			if id == oldID {
				g.order[i] = m.id
			}
		}
		if g.leader == oldID {
			g.leader = m.id
		}
		m.lastSeen = now
		if g.state == StateStable && sameProtocols(m.protocols, req.Protocols) && g.leader != m.id {
			return immediate(c.joinResponse(g, m))
		}
	case req.MemberID == "":
		id := newMemberID(clientID)
		if req.GetVersion() >= 4 && instanceID == "" {
			g.pending[id] = now
			return immediate(joinError(kerr.MemberIDRequired, id))
		}
		m = c.addMember(g, id, instanceID)
	default:
		m = g.members[req.MemberID]
		if m == nil {
			if _, ok := g.pending[req.MemberID]; !ok {
				return immediate(joinError(kerr.UnknownMemberID, req.MemberID))
			}
			delete(g.pending, req.MemberID)
			if instanceID != "" && g.statics[instanceID] != "" {
				return immediate(joinError(kerr.FencedInstanceID, req.MemberID))
			}
			m = c.addMember(g, req.MemberID, instanceID)
		} else if instanceID != "" && g.statics[instanceID] != m.id {
			return immediate(joinError(kerr.FencedInstanceID, req.MemberID))
		} else if g.state == StateStable && sameProtocols(m.protocols, req.Protocols) && g.leader != m.id {
			m.lastSeen = now
			return immediate(c.joinResponse(g, m))
		}
	}
	if m.join != nil {
		// A duplicate join from the same member replaces the older wait.
		m.join <- joinError(kerr.RebalanceInProgress, m.id)
	}
	m.clientID, m.host, m.protocols = clientID, host, req.Protocols
	m.sessionTimeout, m.rebalanceTimeout, m.lastSeen, m.joinVersion = session, rebalance, now, req.GetVersion()
	m.join = make(chan *kmsg.JoinGroupResponse, 1)
	ch := m.join
	if len(g.members) == 1 {
		g.protocolType = req.ProtocolType
	}
	c.prepareRebalance(g)
	if g.deadline.Before(now.Add(rebalance)) {
		g.deadline = now.Add(rebalance)
	}
	c.tryCompleteJoin(g)
	return ch
}

func (c *Coordinator) addMember(g *group, id, instanceID string) *member {
	m := &member{id: id, instanceID: instanceID}
	g.members[id] = m
	g.order = append(g.order, id)
	if instanceID != "" {
		g.statics[instanceID] = id
	}
	return m
}

// checkMember finds a member and applies generation and static-membership
// fencing, Kafka's checks common to SyncGroup, Heartbeat and OffsetCommit.
func (c *Coordinator) checkMember(groupID, memberID string, instanceID *string, generation int32) (*group, *member, *kerr.Error) {
	g := c.groupFor(groupID, false)
	if g == nil {
		return nil, nil, kerr.UnknownMemberID
	}
	m := g.members[memberID]
	if instanceID != nil && *instanceID != "" {
		if id, ok := g.statics[*instanceID]; ok && id != memberID {
			return g, nil, kerr.FencedInstanceID
		}
	}
	if m == nil {
		return g, nil, kerr.UnknownMemberID
	}
	if generation != g.generation {
		return g, m, kerr.IllegalGeneration
	}
	m.lastSeen = c.cfg.Now()
	return g, m, nil
}

// Sync handles SyncGroup; followers wait for the leader's assignment.
func (c *Coordinator) Sync(req *kmsg.SyncGroupRequest) <-chan *kmsg.SyncGroupResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, m, err := c.checkMember(req.Group, req.MemberID, req.InstanceID, req.Generation)
	if err != nil {
		return immediate(&kmsg.SyncGroupResponse{ErrorCode: err.Code})
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) || (req.Protocol != nil && *req.Protocol != g.protocol) {
		return immediate(&kmsg.SyncGroupResponse{ErrorCode: kerr.InconsistentGroupProtocol.Code})
	}
	switch g.state {
	case StatePreparingRebalance:
		return immediate(&kmsg.SyncGroupResponse{ErrorCode: kerr.RebalanceInProgress.Code})
	case StateStable:
		return immediate(c.syncResponse(g, m))
	}
	if m.sync != nil {
		m.sync <- &kmsg.SyncGroupResponse{ErrorCode: kerr.RebalanceInProgress.Code}
	}
	m.sync = make(chan *kmsg.SyncGroupResponse, 1)
	ch := m.sync
	if m.id == g.leader {
		for _, a := range req.GroupAssignment {
			if o := g.members[a.MemberID]; o != nil {
				o.assignment = a.MemberAssignment
			}
		}
		g.state = StateStable
		for _, o := range g.members {
			if o.sync != nil {
				o.sync <- c.syncResponse(g, o)
				o.sync = nil
			}
		}
	}
	return ch
}

func (c *Coordinator) syncResponse(g *group, m *member) *kmsg.SyncGroupResponse {
	return &kmsg.SyncGroupResponse{ProtocolType: kmsg.StringPtr(g.protocolType), Protocol: kmsg.StringPtr(g.protocol),
		MemberAssignment: m.assignment}
}

// Heartbeat handles Heartbeat.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, _, err := c.checkMember(req.Group, req.MemberID, req.InstanceID, req.Generation)
	if err != nil {
		return err
	}
	if g.state == StatePreparingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

// Leave removes members; it returns the error for each member given, or
// for the whole request when the group is unknown.
func (c *Coordinator) Leave(groupID string, members []kmsg.LeaveGroupRequestMember) (*kerr.Error, []*kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groupFor(groupID, false)
	if g == nil {
		return kerr.UnknownMemberID, nil
	}
	errs := make([]*kerr.Error, len(members))
	for i, lm := range members {
		id := lm.MemberID
		if lm.InstanceID != nil && *lm.InstanceID != "" {
			static, ok := g.statics[*lm.InstanceID]
			if !ok {
				errs[i] = kerr.UnknownMemberID
				continue
			}
			if id != "" && id != static {
				errs[i] = kerr.FencedInstanceID
				continue
			}
			id = static
		}
		m := g.members[id]
		if m == nil {
			errs[i] = kerr.UnknownMemberID
			continue
		}
		c.removeMember(g, m, kerr.UnknownMemberID)
	}
	return nil, errs
}

// ValidateCommit checks that a member may commit offsets for its group.
// Generation -1 is a commit from outside group management, allowed only
// while the group has no members.
func (c *Coordinator) ValidateCommit(groupID, memberID string, instanceID *string, generation int32) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groupFor(groupID, false)
	if generation < 0 {
		if g != nil && len(g.members) > 0 {
			return kerr.UnknownMemberID
		}
		return nil
	}
	g, _, err := c.checkMember(groupID, memberID, instanceID, generation)
	if err != nil {
		return err
	}
	if g.state == StateCompletingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

// Description is a group as DescribeGroups shows it.
type Description struct {
	State, ProtocolType, Protocol string
	Generation                    int32
	Leader                        string
	Members                       []MemberDescription
}

// MemberDescription is one member as DescribeGroups shows it.
type MemberDescription struct {
	ID, InstanceID, ClientID, Host   string
	Metadata, Assignment             []byte
	SessionTimeout, RebalanceTimeout time.Duration
}

// Describe returns a group's state, or false if it has no live state here.
func (c *Coordinator) Describe(groupID string) (Description, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groupFor(groupID, false)
	if g == nil {
		return Description{}, false
	}
	d := Description{State: g.state, ProtocolType: g.protocolType, Protocol: g.protocol, Generation: g.generation, Leader: g.leader}
	for _, id := range g.order {
		m := g.members[id]
		d.Members = append(d.Members, MemberDescription{ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, Host: m.host,
			Metadata: metadataFor(m, g.protocol), Assignment: m.assignment, SessionTimeout: m.sessionTimeout, RebalanceTimeout: m.rebalanceTimeout})
	}
	return d, true
}

// List returns every group's state and protocol type, by id.
func (c *Coordinator) List() map[string][2]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][2]string{}
	for _, id := range sortedKeys(c.groups) {
		g := c.groups[id]
		out[id] = [2]string{g.state, g.protocolType}
	}
	return out
}

// Delete forgets an empty group; a group with members is refused.
func (c *Coordinator) Delete(groupID string) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groupFor(groupID, false)
	if g != nil && len(g.members) > 0 {
		return kerr.NonEmptyGroup
	}
	delete(c.groups, groupID)
	return nil
}

// SubscribedTo names, sorted, the consumer groups with a member whose
// subscription (the consumer protocol's metadata it joined with) lists
// topic: groups that consume the topic though they may not have committed
// on it yet.
func (c *Coordinator) SubscribedTo(topic string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, id := range sortedKeys(c.groups) {
		g := c.groups[id]
		if g.protocolType != "consumer" {
			continue
		}
		for _, m := range g.members {
			if subscribes(m, topic) {
				out = append(out, id)
				break
			}
		}
	}
	return out
}

// subscribes reads a consumer member's subscription from the metadata of
// each protocol it offered: every assignor carries the same topics.
func subscribes(m *member, topic string) bool {
	for _, p := range m.protocols {
		var meta kmsg.ConsumerMemberMetadata
		if meta.ReadFrom(p.Metadata) != nil {
			continue
		}
		return slices.Contains(meta.Topics, topic)
	}
	return false
}
