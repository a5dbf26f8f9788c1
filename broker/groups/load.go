package groups

import (
	"bytes"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// A coordinator that takes over (the metadata leader moved) starts from
// each group's membership as the metadata last recorded it, as Kafka's
// coordinator loads its groups from __consumer_offsets. Starting from
// nothing answered every member UNKNOWN_MEMBER_ID and restarted the
// generation at 1: the members rejoined as strangers, and a cooperative
// assignor, which trusts the owner with the higher generation, left a
// partition with two owners at once, whose commits then overwrote each
// other (issue 39's crash test, where a group's commit went backwards).

// load builds a group from its recorded membership, or returns nil when
// nothing is recorded. A group recorded with members is Stable: they go
// on heartbeating at the recorded generation, and those that are gone
// expire after their session timeout, as on a coordinator that never
// moved. A recorded empty group keeps its generation, so that the next
// one is higher than any its members saw.
func (c *Coordinator) load(id string) *group {
	if c.cfg.Recorded == nil {
		return nil
	}
	rec, ok := c.cfg.Recorded(id)
	if !ok {
		return nil
	}
	g := newGroup(id)
	g.protocolType, g.generation = rec.ProtocolType, rec.Generation
	if len(rec.Members) == 0 {
		return g
	}
	now := c.cfg.Now()
	g.state, g.protocol, g.leader = StateStable, rec.Protocol, rec.Leader
	for _, r := range rec.Members {
		m := c.addMember(g, r.ID, r.InstanceID)
		m.clientID, m.host = r.ClientID, r.ClientHost
		m.protocols = []kmsg.JoinGroupRequestProtocol{{Name: rec.Protocol, Metadata: bytes.Clone(r.Subscription)}}
		m.sessionTimeout = time.Duration(r.SessionTimeoutMillis) * time.Millisecond
		m.rebalanceTimeout = time.Duration(r.RebalanceTimeoutMillis) * time.Millisecond
		m.assignment = bytes.Clone(r.Assignment)
		m.lastSeen = now
	}
	if g.members[g.leader] == nil {
		g.leader = g.order[0]
	}
	return g
}

// RecordedMembership reads a group's recorded membership from the
// metadata.
type RecordedMembership func(group string) (meta.GroupMetadata, bool)

// Recorded is the group as the metadata records it (RecordGroupMetadata,
// written by package offsetstopic): what load reads back.
func (d Description) Recorded() meta.GroupMetadata {
	g := meta.GroupMetadata{ProtocolType: d.ProtocolType, Generation: d.Generation, Protocol: d.Protocol, Leader: d.Leader}
	for _, m := range d.Members {
		g.Members = append(g.Members, meta.GroupMember{ID: m.ID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.Host,
			RebalanceTimeoutMillis: int32(m.RebalanceTimeout.Milliseconds()), SessionTimeoutMillis: int32(m.SessionTimeout.Milliseconds()),
			Subscription: m.Metadata, Assignment: m.Assignment})
	}
	return g
}
