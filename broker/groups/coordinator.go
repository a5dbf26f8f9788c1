package groups

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group states, named as Kafka's DescribeGroups reports them.
const (
	StateEmpty               = "Empty"
	StatePreparingRebalance  = "PreparingRebalance"
	StateCompletingRebalance = "CompletingRebalance"
	StateStable              = "Stable"
	StateDead                = "Dead"
)

// Session timeout bounds, Kafka's group.min/max.session.timeout.ms.
const (
	MinSessionTimeout = 6 * time.Second
	MaxSessionTimeout = 30 * time.Minute
)

// Config configures a Coordinator.
type Config struct {
	// InitialRebalanceDelay holds the first rebalance of an empty group so
	// that members starting together join one generation.
	InitialRebalanceDelay time.Duration
	Logger                *slog.Logger
	// Now is the clock; tests may replace it.
	Now func() time.Time
	// Recorded is where a group not held here is looked up before it is
	// made anew (load.go); nil for none.
	Recorded RecordedMembership
}

// Coordinator holds the groups this broker coordinates.
type Coordinator struct {
	cfg    Config
	mu     sync.Mutex
	groups map[string]*group
}

type member struct {
	id, instanceID   string
	clientID, host   string
	protocols        []kmsg.JoinGroupRequestProtocol
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	lastSeen         time.Time
	assignment       []byte
	join             chan *kmsg.JoinGroupResponse
	sync             chan *kmsg.SyncGroupResponse
	joinVersion      int16
}

type group struct {
	id           string
	state        string
	protocolType string
	protocol     string
	generation   int32
	leader       string
	members      map[string]*member
	order        []string          // member ids in join order, to pick a leader
	statics      map[string]string // instance id -> member id
	pending      map[string]time.Time
	notBefore    time.Time // initial rebalance delay
	deadline     time.Time // rebalance timeout
}

// NewCoordinator returns an empty coordinator.
func NewCoordinator(cfg Config) *Coordinator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Coordinator{cfg: cfg, groups: map[string]*group{}}
}

// Run expires sessions and completes timed-out rebalances until ctx ends.
func (c *Coordinator) Run(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.tick()
		}
	}
}

// Reset forgets every group; called when this broker stops coordinating.
func (c *Coordinator) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.groups {
		for _, m := range g.members {
			failMember(m, kerr.NotCoordinator)
		}
	}
	c.groups = map[string]*group{}
}

func (c *Coordinator) tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	for _, g := range c.groups {
		for id, at := range g.pending {
			if now.Sub(at) > MaxSessionTimeout {
				delete(g.pending, id)
			}
		}
		for _, m := range g.members {
			if m.join == nil && now.Sub(m.lastSeen) > m.sessionTimeout {
				c.cfg.Logger.Info("group member session expired", "group", g.id, "member", m.id)
				c.removeMember(g, m, kerr.UnknownMemberID)
			}
		}
		c.tryCompleteJoin(g)
	}
}

func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return clientID + "-" + hex.EncodeToString(b[:])
}

func failMember(m *member, err *kerr.Error) {
	if m.join != nil {
		m.join <- &kmsg.JoinGroupResponse{ErrorCode: err.Code, MemberID: m.id, Generation: -1}
		m.join = nil
	}
	if m.sync != nil {
		m.sync <- &kmsg.SyncGroupResponse{ErrorCode: err.Code}
		m.sync = nil
	}
}

func (c *Coordinator) removeMember(g *group, m *member, reason *kerr.Error) {
	failMember(m, reason)
	delete(g.members, m.id)
	if m.instanceID != "" && g.statics[m.instanceID] == m.id {
		delete(g.statics, m.instanceID)
	}
	for i, id := range g.order {
		if id == m.id {
			g.order = append(g.order[:i], g.order[i+1:]...)
			break
		}
	}
	if len(g.members) == 0 {
		if g.state != StateEmpty {
			g.state, g.leader, g.protocol = StateEmpty, "", ""
			g.generation++
		}
		return
	}
	c.prepareRebalance(g)
}

func (c *Coordinator) prepareRebalance(g *group) {
	if g.state == StatePreparingRebalance {
		return
	}
	now := c.cfg.Now()
	if g.state == StateCompletingRebalance {
		for _, m := range g.members {
			if m.sync != nil {
				m.sync <- &kmsg.SyncGroupResponse{ErrorCode: kerr.RebalanceInProgress.Code}
				m.sync = nil
			}
		}
	}
	if g.state == StateEmpty {
		g.notBefore = now.Add(c.cfg.InitialRebalanceDelay)
	} else {
		g.notBefore = now
	}
	var timeout time.Duration
	for _, m := range g.members {
		timeout = max(timeout, m.rebalanceTimeout)
	}
	g.deadline = now.Add(timeout)
	g.state = StatePreparingRebalance
}

// tryCompleteJoin ends the join phase once every member rejoined, or at the
// rebalance deadline without those that did not.
func (c *Coordinator) tryCompleteJoin(g *group) {
	if g.state != StatePreparingRebalance {
		return
	}
	now := c.cfg.Now()
	if now.Before(g.notBefore) {
		return
	}
	all := true
	for _, m := range g.members {
		all = all && m.join != nil
	}
	if !all && now.Before(g.deadline) {
		return
	}
	for _, m := range g.members {
		if m.join == nil {
			c.cfg.Logger.Info("group member did not rejoin in time", "group", g.id, "member", m.id)
			delete(g.members, m.id)
			if g.statics[m.instanceID] == m.id {
				delete(g.statics, m.instanceID)
			}
		}
	}
	order := g.order[:0]
	for _, id := range g.order {
		if g.members[id] != nil {
			order = append(order, id)
		}
	}
	g.order = order
	g.generation++
	if len(g.members) == 0 {
		g.state, g.leader, g.protocol = StateEmpty, "", ""
		return
	}
	g.protocol = selectProtocol(g)
	if g.members[g.leader] == nil {
		g.leader = g.order[0]
	}
	g.state = StateCompletingRebalance
	for _, m := range g.members {
		m.assignment = nil
		resp := c.joinResponse(g, m)
		m.join <- resp
		m.join = nil
		m.lastSeen = now
	}
}

func (c *Coordinator) joinResponse(g *group, m *member) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Generation = g.generation
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.LeaderID = g.leader
	resp.MemberID = m.id
	if m.id == g.leader {
		for _, id := range g.order {
			o := g.members[id]
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID = o.id
			if o.instanceID != "" {
				jm.InstanceID = kmsg.StringPtr(o.instanceID)
			}
			jm.ProtocolMetadata = metadataFor(o, g.protocol)
			resp.Members = append(resp.Members, jm)
		}
	}
	return resp
}

func metadataFor(m *member, protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// selectProtocol picks the protocol every member supports that most members
// rank first, as Kafka does; ties go to the leader's order.
func selectProtocol(g *group) string {
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if supportedByAll(g, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	lead := g.members[g.leader]
	if lead == nil {
		lead = g.members[g.order[0]]
	}
	best, bestVotes := "", -1
	for _, p := range lead.protocols {
		if v, ok := votes[p.Name]; ok && v > bestVotes {
			best, bestVotes = p.Name, v
		}
	}
	return best
}

func supportedByAll(g *group, name string) bool {
	for _, m := range g.members {
		if !hasProtocol(m, name) {
			return false
		}
	}
	return true
}

func hasProtocol(m *member, name string) bool {
	for _, p := range m.protocols {
		if p.Name == name {
			return true
		}
	}
	return false
}

// compatible reports whether a joining member shares a protocol with the
// current members.
func compatible(g *group, protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if supportedByAll(g, p.Name) {
			return true
		}
	}
	return false
}

// groupFor is the group held here, else the recorded one (load), else a
// new empty group if create, else nil.
func (c *Coordinator) groupFor(id string, create bool) *group {
	g := c.groups[id]
	if g == nil {
		g = c.load(id)
	}
	if g == nil && create {
		g = newGroup(id)
	}
	if g != nil {
		c.groups[id] = g
	}
	return g
}

func newGroup(id string) *group {
	return &group{id: id, state: StateEmpty, members: map[string]*member{}, statics: map[string]string{}, pending: map[string]time.Time{}}
}

func sameProtocols(a, b []kmsg.JoinGroupRequestProtocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || string(a[i].Metadata) != string(b[i].Metadata) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
