package node

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"time"

	"github.com/lni/dragonboat/v3"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/raftka/raftka/broker/hold"
	"github.com/raftka/raftka/broker/meta"
)

// serveHTTP serves /metrics, /readyz, /safe-to-restart and /growth for Prometheus,
// the kubelet and the operator, and the endpoints brokers ask each other
// when they start (cluster.Incarnation). It starts before Raft does; the
// endpoints that need Raft answer 503 until it runs.
func (b *Broker) serveHTTP(ctx context.Context, ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /internal/identity", b.incarnation.HandleIdentity)
	mux.Handle("/metrics", b.afterStart(promhttp.HandlerFor(b.metrics.registry, promhttp.HandlerOpts{})))
	mux.Handle("/readyz", b.afterStart(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeCheck(w, b.Readiness()) })))
	mux.Handle("GET /growth", b.afterStart(hold.Handler(b.meta)))
	mux.Handle("/safe-to-restart", b.afterStart(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeCheck(w, b.SafeToRestart()) })))
	mux.Handle("POST /internal/join", b.peerHTTP.OnlyPeers(b.afterStart(http.HandlerFunc(b.incarnation.HandleJoin))))
	mux.Handle("GET /internal/replica", b.peerHTTP.OnlyPeers(b.afterStart(http.HandlerFunc(b.replicas.HandleReplica))))
	if b.cfg.EnablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	// A refused handshake (a scanner, a client of another CA) is the
	// caller's business; it is logged at debug.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(b.log.Handler(), slog.LevelDebug)}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	_ = srv.Serve(b.peerHTTP.Listen(ln))
}

// afterStart answers 503 until the broker's Raft runs.
func (b *Broker) afterStart(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-b.started:
			h.ServeHTTP(w, r)
		default:
			http.Error(w, "starting", http.StatusServiceUnavailable)
		}
	})
}

// Check is the answer of a health check: OK, or the reasons it is not.
type Check struct {
	OK      bool     `json:"ok"`
	Reasons []string `json:"reasons,omitempty"`
}

func writeCheck(w http.ResponseWriter, c Check) {
	w.Header().Set("Content-Type", "application/json")
	if !c.OK {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(c)
}

// Readiness is OK once the broker is registered, the metadata group has a
// leader, and every partition replica it hosts has a leader.
func (b *Broker) Readiness() Check {
	var reasons []string
	now := time.Now()
	switch leader, ok, err := b.nh.GetLeaderID(meta.MetadataShard); {
	case errors.Is(err, dragonboat.ErrClusterNotFound):
		reasons = append(reasons, "removed from the metadata group (RemoveRaftVoter): this broker is leaving the cluster")
	case (err != nil || !ok || leader == 0) && !b.replicas.Electing(meta.MetadataShard, now):
		reasons = append(reasons, "metadata group has no leader")
	}
	if _, registered := b.meta.Broker(b.cfg.ID); !registered {
		reasons = append(reasons, "broker not registered yet")
	}
	// A replica still joining its group is not ready; a group electing a
	// new leader after another broker's restart does not make this one
	// unready, or a rolling restart would see two brokers down at once.
	leaderless := 0
	for _, shard := range b.replicas.Shards() {
		if _, ok, err := b.nh.GetLeaderID(shard); (err != nil || !ok) && !b.replicas.Electing(shard, now) {
			leaderless++
		}
	}
	if leaderless > 0 {
		reasons = append(reasons, plural(leaderless, "hosted partition has", "hosted partitions have")+" no leader")
	}
	// A restarting broker starts the replicas it has a moment after its
	// Raft address listens (replica.quietGroups): until then it serves none.
	if n := b.replicas.NotStartedOnDisk(); n > 0 {
		reasons = append(reasons, plural(n, "hosted partition replica has", "hosted partition replicas have")+" not started again yet")
	}
	// Unready, so that a rolling restart stops here rather than take
	// another broker down while this one lacks replicas.
	if n := b.replicas.WaitingForFiles(); n > 0 {
		reasons = append(reasons, plural(n, "partition replica waits", "partition replicas wait")+
			" for open files: raise the broker's open-file limit (ulimit -n), three files per replica")
	}
	return Check{OK: len(reasons) == 0, Reasons: reasons}
}

// SafeToRestart is OK when every Raft group this broker belongs to keeps a
// quorum of live voters without it. The voters are the group's members as
// this broker's replica knows them: a replica still catching up as an
// observer does not count, nor does the node of an incarnation its broker
// replaced.
func (b *Broker) SafeToRestart() Check {
	var reasons []string
	voters := map[uint64][]int32{}
	if info := b.nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{SkipLogInfo: true}); info != nil {
		b.meta.Read(func(s *meta.State) {
			for _, ci := range info.ClusterInfoList {
				if ci.Pending {
					continue
				}
				current := func(id int32) uint64 { br, _ := s.Broker(id); return br.Node() }
				if _, p := s.PartitionOfShard(ci.ClusterID); p != nil {
					current = p.NodeOf
				}
				voters[ci.ClusterID] = voterBrokers(ci.Nodes, current)
			}
		})
	}
	if !b.keepsQuorumWithoutMe(voters[meta.MetadataShard]) {
		reasons = append(reasons, "metadata group would lose its quorum")
	}
	var lost []string
	for _, h := range b.meta.HostedPartitions(b.cfg.ID, nil) {
		members, known := voters[h.Shard]
		if !known {
			members = h.Replicas
		}
		if !b.keepsQuorumWithoutMe(members) {
			lost = append(lost, h.Topic+"-"+itoa(h.Index))
		}
	}
	sort.Strings(lost)
	if len(lost) > 0 {
		if len(lost) > 10 {
			lost = append(lost[:10], "...")
		}
		reasons = append(reasons, "partitions would lose their quorum: "+joinComma(lost))
	}
	return Check{OK: len(reasons) == 0, Reasons: reasons}
}

// voterBrokers names the broker of each voter node, or -1 for a node
// its broker no longer runs (current names the node it runs), which never
// answers again.
func voterBrokers(nodes map[uint64]string, current func(broker int32) uint64) []int32 {
	out := make([]int32, 0, len(nodes))
	for n := range nodes {
		if id := meta.BrokerOfNode(n); current(id) == n {
			out = append(out, id)
		} else {
			out = append(out, -1)
		}
	}
	return out
}

func (b *Broker) keepsQuorumWithoutMe(members []int32) bool {
	live := 0
	for _, id := range members {
		if id != b.cfg.ID && b.liveness.IsLive(id) {
			live++
		}
	}
	return live >= len(members)/2+1
}
