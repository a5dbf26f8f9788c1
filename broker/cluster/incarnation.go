package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/raftka/raftka/broker/cluster"
	"github.com/raftka/raftka/broker/identity"
	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
)

// A broker's Raft node ids carry its generation (meta.RaftNodeID), so a
// broker that starts on an empty data directory is never the replicas its
// broker id had: it joins the cluster as a new incarnation, with the next
// generation, and the leaders of its groups replace its old replicas by
// membership change (membership.go). Only when every metadata voter is
// starting on an empty directory at once is the cluster new: those voters
// found the metadata group together, as generation 0.

// settleIncarnation decides, before any Raft group starts, which
// incarnation this broker is: the one its data directory records, the
// first one of a new cluster, or a new one that joins the cluster.
func (b *Broker) settleIncarnation(ctx context.Context, found identity.State) error {
	switch {
	case found == identity.Recorded && (b.self.Registered || b.self.Original):
		return b.checkNotReplaced(ctx)
	case found == identity.Recorded:
		// A join that did not finish: the same incarnation asks again.
		return b.join(ctx)
	case found == identity.Legacy && b.nh.HasNodeInfo(meta.MetadataShard, meta.RaftNodeID(b.cfg.ID, 0)):
		b.log.Info("data directory predates incarnations: it is generation 0", "incarnation", b.self.Incarnation)
		return b.markOriginal()
	}
	if b.cfg.isVoter() {
		founder, err := b.foundOrJoin(ctx)
		if err != nil {
			return err
		}
		if founder {
			b.log.Info("founding the metadata group with the other voters", "incarnation", b.self.Incarnation)
			return b.markOriginal()
		}
	}
	b.log.Warn("empty data directory: joining the cluster as a new incarnation of this broker", "incarnation", b.self.Incarnation)
	return b.join(ctx)
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

func (b *Broker) identityAnswer(asked int32) identityAnswer {
	b.selfMu.Lock()
	a := identityAnswer{BrokerID: b.cfg.ID, ClusterID: b.self.ClusterID, Established: b.self.Registered || b.legacyData}
	b.selfMu.Unlock()
	b.meta.Read(func(s *meta.State) {
		a.Established = a.Established || s.Established()
		if br, ok := s.Broker(asked); ok {
			a.Asked = &br
		} else if g, ok := s.RetiredGeneration(asked); ok {
			a.AskedRetired = &g
		}
	})
	return a
}

func (b *Broker) handleIdentity(w http.ResponseWriter, r *http.Request) {
	asked, err := strconv.ParseInt(r.URL.Query().Get("broker"), 10, 32)
	if err != nil {
		asked = -1
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(b.identityAnswer(int32(asked)))
}

// checkNotReplaced asks the brokers of --join, once, whether a newer
// incarnation of this broker replaced the one this data directory holds,
// as when a volume that went missing comes back after the broker started
// on an empty one. Its replicas were replaced by membership change, so it
// must not start: it could only serve a stale view. So must a data
// directory of an incarnation that was unregistered (UnregisterBroker),
// whose metadata node left the group. A broker that no peer answers
// starts, and its registration is refused if it was replaced.
func (b *Broker) checkNotReplaced(ctx context.Context) error {
	client := b.peerHTTP.Client(time.Second)
	for _, addr := range b.cfg.JoinAddresses {
		a, err := b.peerIdentity(ctx, client, addr, b.cfg.ID)
		if err != nil || a.BrokerID == b.cfg.ID {
			continue
		}
		if a.AskedRetired != nil && *a.AskedRetired >= b.self.Generation && b.self.Registered {
			return fmt.Errorf("this data directory belongs to broker %d's incarnation of generation %d, which was unregistered from the cluster: "+
				"start the broker on an empty data directory to join it again", b.cfg.ID, b.self.Generation)
		}
		if a.Asked == nil {
			continue
		}
		known := a.Asked
		if known.Generation > b.self.Generation || (known.Incarnation != "" && known.Incarnation != b.self.Incarnation) {
			return b.replacedError(known.Generation)
		}
	}
	return nil
}

func (b *Broker) replacedError(current uint32) error {
	return fmt.Errorf("data directory %s belongs to incarnation %s (generation %d) of broker %d, which generation %d replaced: "+
		"its replicas were replaced by membership change; move the directory away to start this broker as a new incarnation",
		b.cfg.DataDir, b.self.Incarnation, b.self.Generation, b.cfg.ID, current)
}

// foundOrJoin asks the brokers of --join whether the cluster exists. One
// that knows an established cluster means this voter lost its disk: it
// joins. Only when every other founding voter, and every other --join
// address that names a host, answers that it knows none does this voter
// found the group, with the others. A broker that does not answer could
// hold the cluster, so this one waits for it: after the cluster grew, the
// voters may be brokers other than the founders. An address whose host
// does not exist (a broker pod that was never created) cannot.
func (b *Broker) foundOrJoin(ctx context.Context) (bool, error) {
	client := b.peerHTTP.Client(time.Second)
	for attempt := 0; ; attempt++ {
		answered := map[int32]bool{}
		var silent []string
		for _, addr := range b.cfg.JoinAddresses {
			a, err := b.peerIdentity(ctx, client, addr, b.cfg.ID)
			var dnsErr *net.DNSError
			switch {
			case err != nil && errors.As(err, &dnsErr) && dnsErr.IsNotFound:
				continue
			case err != nil:
				silent = append(silent, addr)
				continue
			case a.BrokerID == b.cfg.ID:
				continue
			case a.Established:
				b.log.Info("a broker knows the cluster", "broker", a.BrokerID, "cluster", a.ClusterID)
				return false, nil
			}
			answered[a.BrokerID] = true
		}
		var missing []int32
		for id := range b.cfg.MetadataVoters {
			if id != b.cfg.ID && !answered[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 && len(silent) == 0 {
			return true, nil
		}
		if attempt%20 == 0 {
			sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
			b.log.Warn("empty data directory: waiting for the other brokers to tell whether the cluster exists", "unanswered voters", missing, "unanswered addresses", silent)
		}
		if !wait.Sleep(ctx, 250*time.Millisecond) {
			return false, ctx.Err()
		}
	}
}

func (b *Broker) peerIdentity(ctx context.Context, client *http.Client, addr string, asked int32) (identityAnswer, error) {
	var a identityAnswer
	err := cluster.GetJSON(ctx, client, b.peerHTTP.URL(addr, "/internal/identity", url.Values{"broker": {strconv.Itoa(int(asked))}}), &a)
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
func (b *Broker) join(ctx context.Context) error {
	if len(b.cfg.JoinAddresses) == 0 {
		return errors.New("no --join addresses to join the cluster through")
	}
	if err := b.saveSelf(); err != nil {
		return err
	}
	self, err := b.selfRecord()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(joinRequest{Broker: self})
	client := b.peerHTTP.Client(20 * time.Second)
	for attempt := 0; ; attempt++ {
		for _, addr := range b.cfg.JoinAddresses {
			ans, err := postJoin(ctx, client, b.peerHTTP.URL(addr, "/internal/join", nil), body)
			if err == nil {
				b.selfMu.Lock()
				b.self.Generation, b.self.ClusterID, b.self.Registered = ans.Generation, ans.ClusterID, true
				b.self.MetadataRole = identity.RoleObserver
				if ans.Voter {
					b.self.MetadataRole = identity.RoleVoter
				}
				b.selfMu.Unlock()
				b.log.Info("joined the cluster as a new incarnation", "via", addr, "generation", ans.Generation, "cluster", ans.ClusterID)
				return b.saveSelf()
			}
			if attempt%10 == 0 {
				b.log.Warn("join attempt failed", "via", addr, "error", err)
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

// handleJoin records a new incarnation of a broker in the metadata and
// makes it a member of the metadata group in place of its older ones.
func (b *Broker) handleJoin(w http.ResponseWriter, r *http.Request) {
	var req joinRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Broker.ID < 0 || req.Broker.RaftAddr == "" || req.Broker.Incarnation == "" {
		http.Error(w, "want {broker: {ID, Host, Port, RaftAddr, Incarnation}}", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	out, err := b.proposeMeta(ctx, &meta.Command{JoinBroker: &req.Broker})
	if err == nil && out.Err != nil {
		err = out.Err
	}
	if err != nil || out.Broker == nil {
		http.Error(w, fmt.Sprintf("record the incarnation: %v", err), http.StatusServiceUnavailable)
		return
	}
	joined := *out.Broker
	voter, err := b.admitToMetadata(ctx, joined)
	if err != nil {
		http.Error(w, "add to the metadata group: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	ans := joinAnswer{Generation: joined.Generation, Voter: voter, ClusterID: b.meta.ClusterID()}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ans)
}

// admitToMetadata makes joined's node a member of the metadata group: a
// voter if the metadata records its broker as one (quorum.go), else an
// observer; it reports whether it added the node as a voter. The nodes
// of its broker's older incarnations go first: they cannot come back,
// and one that voted would count toward a quorum it cannot make. A
// voter joins as a voter at once, after its old node left: the group's
// state is small, so it catches up within moments, and the quorum is the
// same as without it.
func (b *Broker) admitToMetadata(ctx context.Context, joined meta.Broker) (bool, error) {
	node := joined.Node()
	var voter bool
	b.meta.Read(func(s *meta.State) { voter = s.VotesInMetadata(joined.ID, b.cfg.MetadataVoters) })
	for {
		m, err := b.nh.SyncGetClusterMembership(ctx, meta.MetadataShard)
		if err != nil {
			return voter, err
		}
		if old, ok := olderNodeOf(m.Nodes, m.Observers, joined.ID, node); ok {
			b.log.Warn("removing a replaced incarnation from the metadata group", "broker", joined.ID, "node", old, "generation", meta.EpochOfNode(old))
			if err := b.nh.SyncRequestDeleteNode(ctx, meta.MetadataShard, old, m.ConfigChangeID); err != nil {
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
			err = b.nh.SyncRequestAddNode(ctx, meta.MetadataShard, node, joined.RaftAddr, m.ConfigChangeID)
		default:
			err = b.nh.SyncRequestAddObserver(ctx, meta.MetadataShard, node, joined.RaftAddr, m.ConfigChangeID)
		}
		if err == nil {
			b.log.Info("metadata group member added", "broker", joined.ID, "node", node, "voter", voter)
		}
		return voter && !observing, err
	}
}

// olderNodeOf finds a member node of broker from an epoch before
// current's.
func olderNodeOf(voters, observers map[uint64]string, broker int32, current uint64) (uint64, bool) {
	for _, n := range (groupView{voters: voters, observers: observers}).sortedMembers() {
		if meta.BrokerOfNode(n) == broker && meta.EpochOfNode(n) < meta.EpochOfNode(current) {
			return n, true
		}
	}
	return 0, false
}

// saveSelf writes this broker's identity to its data directory.
func (b *Broker) saveSelf() error {
	b.selfMu.Lock()
	defer b.selfMu.Unlock()
	return identity.Save(b.cfg.DataDir, b.self)
}

// markOriginal records that this is its broker's first incarnation.
func (b *Broker) markOriginal() error {
	b.selfMu.Lock()
	b.self.Original = true
	b.selfMu.Unlock()
	return b.saveSelf()
}

// recordRegistration notes in the data directory that the metadata group
// recorded this incarnation, and the cluster it belongs to.
func (b *Broker) recordRegistration(clusterID string) {
	b.selfMu.Lock()
	if b.self.ClusterID != "" && clusterID != "" && b.self.ClusterID != clusterID {
		b.selfMu.Unlock()
		b.fail(fmt.Errorf("data directory %s belongs to cluster %s, but the metadata group is cluster %s", b.cfg.DataDir, b.self.ClusterID, clusterID))
		return
	}
	defer b.registeredOnce.Do(func() { close(b.registered) })
	if b.self.Registered && b.self.ClusterID == clusterID {
		b.selfMu.Unlock()
		return
	}
	b.self.Registered, b.self.ClusterID = true, clusterID
	b.selfMu.Unlock()
	if err := b.saveSelf(); err != nil {
		b.log.Error("record registration in the data directory failed", "error", err)
	}
}
