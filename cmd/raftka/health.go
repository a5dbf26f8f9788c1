package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/raftka/raftka/internal/brokerclient"
)

// brokerHealth is one broker as cluster health sees it.
type brokerHealth struct {
	ID      int32  `json:"id"`
	Address string `json:"address"`
	// Fenced: registered but not answering its peers.
	Fenced bool `json:"fenced,omitempty"`
	// Metadata is the broker's part in the metadata group: leader, voter
	// or observer.
	Metadata string `json:"metadata,omitempty"`
	HTTP     string `json:"http,omitempty"`
	Ready    *bool  `json:"ready,omitempty"`
	// SafeToRestart is what /safe-to-restart says: every Raft group the
	// broker belongs to keeps a quorum without it.
	SafeToRestart *bool    `json:"safeToRestart,omitempty"`
	Reasons       []string `json:"reasons,omitempty"`
}

// partitionRef names a partition and what is wrong with it.
type partitionRef struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	InSync    []int32 `json:"inSync"`
}

// clusterHealth is cluster health's answer.
type clusterHealth struct {
	Healthy         bool           `json:"healthy"`
	Problems        []string       `json:"problems"`
	MetadataLeader  int32          `json:"metadataLeader"`
	Brokers         []brokerHealth `json:"brokers"`
	Partitions      int            `json:"partitions"`
	UnderReplicated []partitionRef `json:"underReplicated"`
	Leaderless      []partitionRef `json:"leaderless"`
}

// clusterHealth says whether the cluster is whole: every registered
// broker answers and is ready, the metadata group has a leader, and every
// partition has a leader and all its replicas in sync; it also asks each
// broker whether it may restart now. It exits 1 when something is not
// whole, so that scripts can wait on it.
func clusterHealthCommand(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		return usagef("no arguments")
	}
	cl, err := e.client(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx)
	if err != nil {
		return err
	}
	h := clusterHealth{MetadataLeader: -1}
	registered, err := brokerclient.ReadRegistered(ctx, cl)
	if err != nil {
		return fmt.Errorf("list the registered brokers: %w", err)
	}
	quorum, qerr := brokerclient.ReadQuorum(ctx, cl)
	if qerr != nil {
		h.Problems = append(h.Problems, "the metadata group did not answer: "+qerr.Error())
	} else {
		h.MetadataLeader = quorum.Leader
		if quorum.Leader < 0 {
			h.Problems = append(h.Problems, "the metadata group has no leader")
		}
	}
	endpoints := httpEndpoints(ctx, adm, md)
	for _, r := range registered {
		// A broker that is down is in the registry, with its address,
		// though not in Metadata's list of brokers.
		b := brokerHealth{ID: r.ID, Address: r.Address, Fenced: r.Fenced}
		switch {
		case qerr != nil:
		case quorum.Leader == r.ID:
			b.Metadata = "leader"
		case slices.Contains(quorum.Voters, r.ID):
			b.Metadata = "voter"
		case slices.Contains(quorum.Observers, r.ID):
			b.Metadata = "observer"
		}
		if r.Fenced {
			h.Problems = append(h.Problems, fmt.Sprintf("broker %d does not answer its peers", r.ID))
		} else if b.HTTP = endpoints[r.ID]; b.HTTP != "" {
			askChecks(ctx, &b)
			if b.Ready != nil && !*b.Ready {
				h.Problems = append(h.Problems, fmt.Sprintf("broker %d is not ready", r.ID))
			}
		}
		h.Brokers = append(h.Brokers, b)
	}
	for _, t := range brokerclient.UserTopics(md.Topics).Sorted() {
		for _, p := range t.Partitions.Sorted() {
			h.Partitions++
			ref := partitionRef{Topic: t.Topic, Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, InSync: p.ISR}
			switch {
			case p.Leader < 0:
				h.Leaderless = append(h.Leaderless, ref)
			case len(p.ISR) < len(p.Replicas):
				h.UnderReplicated = append(h.UnderReplicated, ref)
			}
		}
	}
	if n := len(h.Leaderless); n > 0 {
		h.Problems = append(h.Problems, fmt.Sprintf("%s without a leader", plural(n, "partition")))
	}
	if n := len(h.UnderReplicated); n > 0 {
		h.Problems = append(h.Problems, fmt.Sprintf("%s under-replicated", plural(n, "partition")))
	}
	h.Healthy = len(h.Problems) == 0
	if err := printHealth(e, h); err != nil {
		return err
	}
	if !h.Healthy {
		return fmt.Errorf("not healthy: %s", strings.Join(h.Problems, "; "))
	}
	return nil
}

// httpEndpoints asks the live brokers, in one DescribeConfigs that kadm
// sends to each, where their HTTP endpoints are (the read-only broker
// config raftka.http.endpoint). A broker that does not answer is left out.
func httpEndpoints(ctx context.Context, adm *kadm.Client, md kadm.Metadata) map[int32]string {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	configs, _ := adm.DescribeBrokerConfigs(cctx, md.Brokers.NodeIDs()...)
	out := map[int32]string{}
	for _, rc := range configs {
		id, err := strconv.ParseInt(rc.Name, 10, 32)
		if rc.Err != nil || err != nil {
			continue
		}
		for _, c := range rc.Configs {
			if c.Key == "raftka.http.endpoint" && c.Value != nil {
				out[int32(id)] = *c.Value
			}
		}
	}
	return out
}

// askChecks fills in what a broker's /readyz and /safe-to-restart say.
func askChecks(ctx context.Context, b *brokerHealth) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if c, err := brokerclient.Readiness(cctx, b.HTTP); err == nil {
		b.Ready = &c.OK
		b.Reasons = append(b.Reasons, c.Reasons...)
	} else {
		b.Reasons = append(b.Reasons, "HTTP endpoint: "+err.Error())
	}
	if c, err := brokerclient.SafeToRestart(cctx, b.HTTP); err == nil {
		b.SafeToRestart = &c.OK
		b.Reasons = append(b.Reasons, c.Reasons...)
	}
}

func printHealth(e *env, h clusterHealth) error {
	if e.json {
		for _, list := range []*[]partitionRef{&h.UnderReplicated, &h.Leaderless} {
			if *list == nil {
				*list = []partitionRef{}
			}
		}
		if h.Problems == nil {
			h.Problems = []string{}
		}
		return printJSON(e.out, h)
	}
	state := "healthy"
	if !h.Healthy {
		state = "NOT HEALTHY: " + strings.Join(h.Problems, "; ")
	}
	_, _ = fmt.Fprintf(e.out, "%s\n%d partitions, %d under-replicated, %d without a leader; metadata leader %d\n\n",
		state, h.Partitions, len(h.UnderReplicated), len(h.Leaderless), h.MetadataLeader)
	yesNo := func(v *bool) string {
		switch {
		case v == nil:
			return "?"
		case *v:
			return "yes"
		}
		return "no"
	}
	var cells [][]string
	for _, b := range h.Brokers {
		ready := yesNo(b.Ready)
		if b.Fenced {
			ready = "down"
		}
		cells = append(cells, []string{strconv.Itoa(int(b.ID)), b.Address, b.Metadata, ready, yesNo(b.SafeToRestart), strings.Join(b.Reasons, "; ")})
	}
	if err := printTable(e.out, []string{"BROKER", "ADDRESS", "METADATA", "READY", "SAFE-TO-RESTART", "WHY"}, cells); err != nil {
		return err
	}
	cells = nil
	for _, p := range append(append([]partitionRef(nil), h.Leaderless...), h.UnderReplicated...) {
		cells = append(cells, []string{p.Topic, strconv.Itoa(int(p.Partition)), strconv.Itoa(int(p.Leader)), fmt.Sprint(p.Replicas), fmt.Sprint(p.InSync)})
	}
	if len(cells) == 0 {
		return nil
	}
	_, _ = fmt.Fprintln(e.out)
	return printTable(e.out, []string{"TOPIC", "PARTITION", "LEADER", "REPLICAS", "IN-SYNC"}, cells)
}
