package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/lni/dragonboat/v3"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/raftka/raftka/broker/identity"
	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
)

// A broker's Raft node ids carry its generation (meta.RaftNodeID), so a
// broker that starts on an empty data directory is never the replicas its
// broker id had: it joins the cluster as a new incarnation, with the next
// generation, and the leaders of its groups replace its old replicas by
// membership change. Only when every metadata voter is starting on an
// empty directory at once is the cluster new: those voters found the
// metadata group together, as generation 0.

// IncarnationConfig is what the incarnation needs of the broker's
// configuration.
type IncarnationConfig struct {
	ID      int32
	DataDir string
	// RaftDir is the Raft node host's directory, whose data tells a
	// directory from before identities.
	RaftDir string
	// FoundingVoters are --metadata-voters; JoinAddresses are --join, the
	// HTTP endpoints of brokers to ask whether the cluster exists and to
	// join it through.
	FoundingVoters map[int32]string
	JoinAddresses  []string
}

// MembershipRaft is what the incarnation asks of this broker's Raft node
// host (a *dragonboat.NodeHost): whether it holds a metadata node, and
// the metadata group's membership changes for a joining broker.
type MembershipRaft interface {
	MetadataRaft
	HasNodeInfo(clusterID, nodeID uint64) bool
	SyncRequestAddObserver(ctx context.Context, clusterID, nodeID uint64, target dragonboat.Target, configChangeIndex uint64) error
}

// Incarnation is this broker's incarnation: its identity in the data
// directory (package identity), settled before any Raft group starts and
// then fixed, and registered in the metadata once the group runs. It
// answers the other brokers' questions about it (/internal/identity) and
// lets new incarnations of other brokers join (/internal/join).
type Incarnation struct {
	cfg   IncarnationConfig
	log   *slog.Logger
	meta  *meta.StateMachine
	peers *PeerHTTP
	// propose proposes a metadata command and waits for its outcome.
	propose func(ctx context.Context, cmd *meta.Command) (meta.Outcome, error)
	// record is this broker as the metadata records it, incarnation
	// aside: its addresses.
	record func() (meta.Broker, error)
	raft   MembershipRaft // set by Settle

	mu   sync.Mutex // guards self's later changes and saves
	self identity.Identity
	// legacyData: the data directory held Raft data from before
	// identities, so it belongs to an established cluster.
	legacyData bool
	found      identity.State
	// failed carries the error that stops a running broker.
	failed chan error
	// registered is closed once this broker's registration is applied
	// here.
	registered     chan struct{}
	registeredOnce sync.Once
}

// LoadIncarnation reads this broker's identity from its data directory;
// record gives the broker's addresses, propose proposes metadata commands.
func LoadIncarnation(cfg IncarnationConfig, log *slog.Logger, m *meta.StateMachine, peers *PeerHTTP,
	propose func(context.Context, *meta.Command) (meta.Outcome, error), record func() (meta.Broker, error)) (*Incarnation, error) {
	self, found, err := identity.Load(cfg.DataDir, cfg.RaftDir, cfg.ID)
	if err != nil {
		return nil, err
	}
	return &Incarnation{cfg: cfg, log: log, meta: m, peers: peers, propose: propose, record: record, self: self,
		legacyData: found == identity.Legacy, found: found, failed: make(chan error, 1), registered: make(chan struct{})}, nil
}

// Identity is this broker's identity as it stands.
func (i *Incarnation) Identity() identity.Identity {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.self
}

// Generation is this incarnation's generation, fixed once settled.
func (i *Incarnation) Generation() uint32 { return i.Identity().Generation }

// Failed delivers the error that stopped the broker while it ran: its
// data directory belongs to an incarnation that a newer one replaced, or
// to another cluster.
func (i *Incarnation) Failed() <-chan error { return i.failed }

// Registered is closed once this broker's registration is applied here.
func (i *Incarnation) Registered() <-chan struct{} { return i.registered }

func (i *Incarnation) fail(err error) {
	select {
	case i.failed <- err:
	default:
	}
}

// Settle decides, before any Raft group starts, which incarnation this
// broker is: the one its data directory records, the first one of a new
// cluster, or a new one that joins the cluster. raft is the node host
// that is about to start the groups.
func (i *Incarnation) Settle(ctx context.Context, raft MembershipRaft) error {
	i.raft = raft
	self := i.Identity()
	switch {
	case i.found == identity.Recorded && (self.Registered || self.Original):
		return i.checkNotReplaced(ctx)
	case i.found == identity.Recorded:
		// A join that did not finish: the same incarnation asks again.
		return i.join(ctx)
	case i.found == identity.Legacy && raft.HasNodeInfo(meta.MetadataShard, meta.RaftNodeID(i.cfg.ID, 0)):
		i.log.Info("data directory predates incarnations: it is generation 0", "incarnation", self.Incarnation)
		return i.markOriginal()
	}
	if _, voter := i.cfg.FoundingVoters[i.cfg.ID]; voter {
		founder, err := i.foundOrJoin(ctx)
		if err != nil {
			return err
		}
		if founder {
			i.log.Info("founding the metadata group with the other voters", "incarnation", self.Incarnation)
			return i.markOriginal()
		}
	}
	i.log.Warn("empty data directory: joining the cluster as a new incarnation of this broker", "incarnation", self.Incarnation)
	return i.join(ctx)
}

// identityAnswer is what GET /internal/identity says of a broker.
type identityAnswer struct {
	BrokerID  int32  `json:"brokerID"`
	ClusterID string `json:"clusterID,omitempty"`
	// Established: this broker belongs to a cluster that registered
	// brokers, or holds Raft data; false only for a voter that is itself
	// deciding on an empty directory or founding a group not yet formed.
	Established bool `json:"established"`
	// Asked is the broker the request named (?broker=), as this broker's
	// metadata records it, if it does.
	Asked *meta.Broker `json:"asked,omitempty"`
	// AskedRetired is the generation the asked broker had when it was
	// unregistered (UnregisterBroker), if it was and has not joined since.
	AskedRetired *uint32 `json:"askedRetired,omitempty"`
}

func (i *Incarnation) identityAnswer(asked int32) identityAnswer {
	self := i.Identity()
	a := identityAnswer{BrokerID: i.cfg.ID, ClusterID: self.ClusterID, Established: self.Registered || i.legacyData}
	i.meta.Read(func(s *meta.State) {
		a.Established = a.Established || s.Established()
		if br, ok := s.Broker(asked); ok {
			a.Asked = &br
		} else if g, ok := s.RetiredGeneration(asked); ok {
			a.AskedRetired = &g
		}
	})
	return a
}

// HandleIdentity answers GET /internal/identity?broker=ID.
func (i *Incarnation) HandleIdentity(w http.ResponseWriter, r *http.Request) {
	asked, err := strconv.ParseInt(r.URL.Query().Get("broker"), 10, 32)
	if err != nil {
		asked = -1
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(i.identityAnswer(int32(asked)))
}

// checkNotReplaced asks the brokers of --join, once, whether a newer
// incarnation of this broker replaced the one this data directory holds,
// as when a volume that went missing comes back after the broker started
// on an empty one. Its replicas were replaced by membership change, so it
// must not start: it could only serve a stale view. So must a data
// directory of an incarnation that was unregistered (UnregisterBroker),
// whose metadata node left the group. A broker that no peer answers
// starts, and its registration is refused if it was replaced.
func (i *Incarnation) checkNotReplaced(ctx context.Context) error {
	self := i.Identity()
	client := i.peers.Client(time.Second)
	for _, addr := range i.cfg.JoinAddresses {
		a, err := i.peerIdentity(ctx, client, addr, i.cfg.ID)
		if err != nil || a.BrokerID == i.cfg.ID {
			continue
		}
		if a.AskedRetired != nil && *a.AskedRetired >= self.Generation && self.Registered {
			return fmt.Errorf("this data directory belongs to broker %d's incarnation of generation %d, which was unregistered from the cluster: "+
				"start the broker on an empty data directory to join it again", i.cfg.ID, self.Generation)
		}
		if a.Asked == nil {
			continue
		}
		known := a.Asked
		if known.Generation > self.Generation || (known.Incarnation != "" && known.Incarnation != self.Incarnation) {
			return i.replacedError(known.Generation)
		}
	}
	return nil
}

func (i *Incarnation) replacedError(current uint32) error {
	self := i.Identity()
	return fmt.Errorf("data directory %s belongs to incarnation %s (generation %d) of broker %d, which generation %d replaced: "+
		"its replicas were replaced by membership change; move the directory away to start this broker as a new incarnation",
		i.cfg.DataDir, self.Incarnation, self.Generation, i.cfg.ID, current)
}

// foundOrJoin asks the brokers of --join whether the cluster exists. One
// that knows an established cluster means this voter lost its disk: it
// joins. Only when every other founding voter, and every other --join
// address that names a host, answers that it knows none does this voter
// found the group, with the others. A broker that does not answer could
// hold the cluster, so this one waits for it: after the cluster grew, the
// voters may be brokers other than the founders. An address whose host
// does not exist (a broker pod that was never created) cannot.
func (i *Incarnation) foundOrJoin(ctx context.Context) (bool, error) {
	client := i.peers.Client(time.Second)
	for attempt := 0; ; attempt++ {
		answered := map[int32]bool{}
		var silent []string
		for _, addr := range i.cfg.JoinAddresses {
			a, err := i.peerIdentity(ctx, client, addr, i.cfg.ID)
			var dnsErr *net.DNSError
			switch {
			case err != nil && errors.As(err, &dnsErr) && dnsErr.IsNotFound:
				continue
			case err != nil:
				silent = append(silent, addr)
				continue
			case a.BrokerID == i.cfg.ID:
				continue
			case a.Established:
				i.log.Info("a broker knows the cluster", "broker", a.BrokerID, "cluster", a.ClusterID)
				return false, nil
			}
			answered[a.BrokerID] = true
		}
		var missing []int32
		for id := range i.cfg.FoundingVoters {
			if id != i.cfg.ID && !answered[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 && len(silent) == 0 {
			return true, nil
		}
		if attempt%20 == 0 {
			sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
			i.log.Warn("empty data directory: waiting for the other brokers to tell whether the cluster exists", "unanswered voters", missing, "unanswered addresses", silent)
		}
		if !wait.Sleep(ctx, 250*time.Millisecond) {
			return false, ctx.Err()
		}
	}
}

func (i *Incarnation) peerIdentity(ctx context.Context, client *http.Client, addr string, asked int32) (identityAnswer, error) {
	var a identityAnswer
	err := GetJSON(ctx, client, i.peers.URL(addr, "/internal/identity", url.Values{"broker": {strconv.Itoa(int(asked))}}), &a)
	return a, err
}

// joinRequest asks a member of the metadata group to record a new
// incarnation of a broker and to add it to the group.
type joinRequest struct {
	Broker meta.Broker `json:"broker"`
}

type joinAnswer struct {
	Generation uint32 `json:"generation"`
	ClusterID  string `json:"clusterID"`
	// Voter: the new node was added as a voter, not an observer.
	Voter bool `json:"voter,omitempty"`
}

// join asks the brokers of --join, in turn, to record this broker as a
// new incarnation and add it to the metadata group, until one does. The
// identity is saved first, so that a join cut short by a crash asks again
// for the same incarnation and gets the same generation.
func (i *Incarnation) join(ctx context.Context) error {
	if len(i.cfg.JoinAddresses) == 0 {
		return errors.New("no --join addresses to join the cluster through")
	}
	if err := i.saveSelf(); err != nil {
		return err
	}
	self, err := i.selfRecord()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(joinRequest{Broker: self})
	client := i.peers.Client(20 * time.Second)
	for attempt := 0; ; attempt++ {
		for _, addr := range i.cfg.JoinAddresses {
			ans, err := postJoin(ctx, client, i.peers.URL(addr, "/internal/join", nil), body)
			if err == nil {
				i.mu.Lock()
				i.self.Generation, i.self.ClusterID, i.self.Registered = ans.Generation, ans.ClusterID, true
				i.self.MetadataRole = identity.RoleObserver
				if ans.Voter {
					i.self.MetadataRole = identity.RoleVoter
				}
				i.mu.Unlock()
				i.log.Info("joined the cluster as a new incarnation", "via", addr, "generation", ans.Generation, "cluster", ans.ClusterID)
				return i.saveSelf()
			}
			if attempt%10 == 0 {
				i.log.Warn("join attempt failed", "via", addr, "error", err)
			}
		}
		if !wait.Sleep(ctx, time.Second) {
			return errors.New("stopped before joining the cluster")
		}
	}
}

func postJoin(ctx context.Context, client *http.Client, endpoint string, body []byte) (joinAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return joinAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return joinAnswer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var msg bytes.Buffer
		_, _ = msg.ReadFrom(resp.Body)
		return joinAnswer{}, fmt.Errorf("status %s: %s", resp.Status, bytes.TrimSpace(msg.Bytes()))
	}
	var a joinAnswer
	return a, json.NewDecoder(resp.Body).Decode(&a)
}

// HandleJoin records a new incarnation of a broker in the metadata and
// makes it a member of the metadata group in place of its older ones.
func (i *Incarnation) HandleJoin(w http.ResponseWriter, r *http.Request) {
	var req joinRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Broker.ID < 0 || req.Broker.RaftAddr == "" || req.Broker.Incarnation == "" {
		http.Error(w, "want {broker: {ID, Host, Port, RaftAddr, Incarnation}}", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	out, err := i.propose(ctx, &meta.Command{JoinBroker: &req.Broker})
	if err == nil && out.Err != nil {
		err = out.Err
	}
	if err != nil || out.Broker == nil {
		http.Error(w, fmt.Sprintf("record the incarnation: %v", err), http.StatusServiceUnavailable)
		return
	}
	joined := *out.Broker
	voter, err := i.admitToMetadata(ctx, joined)
	if err != nil {
		http.Error(w, "add to the metadata group: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	ans := joinAnswer{Generation: joined.Generation, Voter: voter, ClusterID: i.meta.ClusterID()}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ans)
}

// admitToMetadata makes joined's node a member of the metadata group: a
// voter if the metadata records its broker as one (Quorum), else an
// observer; it reports whether it added the node as a voter. The nodes
// of its broker's older incarnations go first: they cannot come back,
// and one that voted would count toward a quorum it cannot make. A
// voter joins as a voter at once, after its old node left: the group's
// state is small, so it catches up within moments, and the quorum is the
// same as without it.
func (i *Incarnation) admitToMetadata(ctx context.Context, joined meta.Broker) (bool, error) {
	node := joined.Node()
	var voter bool
	i.meta.Read(func(s *meta.State) { voter = s.VotesInMetadata(joined.ID, i.cfg.FoundingVoters) })
	for {
		m, err := i.raft.SyncGetClusterMembership(ctx, meta.MetadataShard)
		if err != nil {
			return voter, err
		}
		if old, ok := meta.OlderNodeOf(m.Nodes, m.Observers, joined.ID, node); ok {
			i.log.Warn("removing a replaced incarnation from the metadata group", "broker", joined.ID, "node", old, "generation", meta.EpochOfNode(old))
			if err := i.raft.SyncRequestDeleteNode(ctx, meta.MetadataShard, old, m.ConfigChangeID); err != nil {
				return voter, err
			}
			continue
		}
		// A join asked again finds its node added already, maybe as an
		// observer since promoted: it reports an observer, which is safe
		// to start as (startsAsObserver).
		if _, ok := m.Nodes[node]; ok {
			return false, nil
		}
		_, observing := m.Observers[node]
		switch {
		case observing && !voter:
			return false, nil
		case voter:
			err = i.raft.SyncRequestAddNode(ctx, meta.MetadataShard, node, joined.RaftAddr, m.ConfigChangeID)
		default:
			err = i.raft.SyncRequestAddObserver(ctx, meta.MetadataShard, node, joined.RaftAddr, m.ConfigChangeID)
		}
		if err == nil {
			i.log.Info("metadata group member added", "broker", joined.ID, "node", node, "voter", voter)
		}
		return voter && !observing, err
	}
}

// saveSelf writes this broker's identity to its data directory.
func (i *Incarnation) saveSelf() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return identity.Save(i.cfg.DataDir, i.self)
}

// markOriginal records that this is its broker's first incarnation.
func (i *Incarnation) markOriginal() error {
	i.mu.Lock()
	i.self.Original = true
	i.mu.Unlock()
	return i.saveSelf()
}

// recordRegistration notes in the data directory that the metadata group
// recorded this incarnation, and the cluster it belongs to.
func (i *Incarnation) recordRegistration(clusterID string) {
	i.mu.Lock()
	if i.self.ClusterID != "" && clusterID != "" && i.self.ClusterID != clusterID {
		i.mu.Unlock()
		i.fail(fmt.Errorf("data directory %s belongs to cluster %s, but the metadata group is cluster %s", i.cfg.DataDir, i.self.ClusterID, clusterID))
		return
	}
	defer i.registeredOnce.Do(func() { close(i.registered) })
	if i.self.Registered && i.self.ClusterID == clusterID {
		i.mu.Unlock()
		return
	}
	i.self.Registered, i.self.ClusterID = true, clusterID
	i.mu.Unlock()
	if err := i.saveSelf(); err != nil {
		i.log.Error("record registration in the data directory failed", "error", err)
	}
}

// selfRecord is this broker as the metadata records it: its addresses,
// and this incarnation.
func (i *Incarnation) selfRecord() (meta.Broker, error) {
	self, err := i.record()
	self.Incarnation = i.Identity().Incarnation
	return self, err
}

// Register announces this broker's addresses through the metadata group
// and retries until the group has a leader.
func (i *Incarnation) Register(ctx context.Context) {
	self, err := i.selfRecord()
	if err != nil {
		i.log.Error("bad advertised address", "error", err)
		return
	}
	generation := i.Generation()
	self.Generation = generation
	cmd := &meta.Command{RegisterBroker: &self}
	for ctx.Err() == nil {
		var current meta.Broker
		var known bool
		var clusterID string
		i.meta.Read(func(s *meta.State) { current, known = s.Broker(i.cfg.ID); clusterID = s.ClusterID() })
		if known && reflect.DeepEqual(current, *cmd.RegisterBroker) {
			i.recordRegistration(clusterID)
			return
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		out, err := i.propose(pctx, cmd)
		cancel()
		if err == nil && errors.Is(out.Err, kerr.StaleBrokerEpoch) {
			i.log.Error("data directory belongs to a replaced incarnation of this broker", "incarnation", self.Incarnation,
				"generation", generation, "current_generation", current.Generation)
			i.fail(i.replacedError(current.Generation))
			return
		}
		if err == nil && out.Err == nil {
			i.log.Info("broker registered", "generation", generation)
			// Recorded once the registration is applied here too.
			select {
			case <-i.meta.Changed():
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			continue
		}
		wait.Sleep(ctx, 200*time.Millisecond)
	}
}
