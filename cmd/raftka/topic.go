package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/growth"
	"github.com/raftka/raftka/internal/brokerclient"
)

func topicCreate(fs *pflag.FlagSet) runFunc {
	partitions := fs.Int32P("partitions", "p", -1, "partitions of the topic; -1 is the brokers' num.partitions")
	rf := fs.Int16P("replication-factor", "r", -1, "replicas of each partition; -1 is the brokers' default.replication.factor")
	var configs []string
	fs.StringArrayVarP(&configs, "config", "c", nil, "a topic config, key=value (repeat for more)")
	return func(ctx context.Context, e *env, names []string) error {
		if len(names) != 1 {
			return usagef("name one topic")
		}
		// -1 is Kafka's "broker default"; no other count below 1 means anything.
		if *partitions == 0 || *partitions < -1 {
			return usagef("--partitions %d: want 1 or more, or -1 for the brokers' num.partitions", *partitions)
		}
		if *rf == 0 || *rf < -1 {
			return usagef("--replication-factor %d: want 1 or more, or -1 for the brokers' default.replication.factor", *rf)
		}
		cfg, err := keyValues(configs)
		if err != nil {
			return err
		}
		adm, done, err := e.admin(ctx)
		if err != nil {
			return err
		}
		defer done()
		set := map[string]*string{}
		for k, v := range cfg {
			set[k] = &v
		}
		// -1 is the brokers' defaults (num.partitions, default.replication.factor).
		resp, err := adm.CreateTopic(ctx, int32(*partitions), int16(*rf), set, names[0])
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return refused(err, resp.ErrMessage)
		}
		if e.json {
			return printJSON(e.out, map[string]any{"topic": resp.Topic, "id": kafkaUUID(resp.ID), "partitions": resp.NumPartitions, "replicationFactor": resp.ReplicationFactor})
		}
		_, _ = fmt.Fprintf(e.out, "created topic %s: %d partitions, replication factor %d\n", resp.Topic, resp.NumPartitions, resp.ReplicationFactor)
		return nil
	}
}

func topicList(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		return usagef("no arguments")
	}
	adm, done, err := e.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return err
	}
	type row struct {
		Topic             string `json:"topic"`
		Partitions        int    `json:"partitions"`
		ReplicationFactor int    `json:"replicationFactor"`
	}
	var rows []row
	for _, t := range topics.Sorted() {
		rows = append(rows, row{t.Topic, len(t.Partitions), t.Partitions.NumReplicas()})
	}
	if e.json {
		if rows == nil {
			rows = []row{}
		}
		return printJSON(e.out, rows)
	}
	var cells [][]string
	for _, r := range rows {
		cells = append(cells, []string{r.Topic, strconv.Itoa(r.Partitions), strconv.Itoa(r.ReplicationFactor)})
	}
	return printTable(e.out, []string{"TOPIC", "PARTITIONS", "REPLICATION FACTOR"}, cells)
}

// partitionView is one partition as topic describe shows it.
type partitionView struct {
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Epoch     int32   `json:"leaderEpoch"`
	Replicas  []int32 `json:"replicas"`
	InSync    []int32 `json:"inSync"`
	Error     string  `json:"error,omitempty"`
}

type topicView struct {
	Topic      string            `json:"topic"`
	ID         string            `json:"id"`
	Partitions []partitionView   `json:"partitions"`
	Configs    map[string]string `json:"configs"`
	// AllConfigs is every config with its source, with --all.
	AllConfigs []configView `json:"allConfigs,omitempty"`
	// Growth is the topic's ordered growth, from a broker's HTTP endpoint:
	// nil if it never had one, or no broker could be asked.
	Growth *growth.Status `json:"growth,omitempty"`
}

func topicDescribe(fs *pflag.FlagSet) runFunc {
	all := fs.BoolP("all", "a", false, "every config with its value and source (topic, default, broker), as kafka-configs.sh --describe --all shows; without it, those set on the topic")
	return func(ctx context.Context, e *env, args []string) error {
		return describeTopics(ctx, e, args, *all)
	}
}

func describeTopics(ctx context.Context, e *env, args []string, all bool) error {
	adm, done, err := e.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	details, err := adm.ListTopics(ctx, args...)
	if err != nil {
		return err
	}
	configs, err := adm.DescribeTopicConfigs(ctx, args...)
	if err != nil {
		return err
	}
	var views []topicView
	for _, name := range args {
		d, ok := details[name]
		if !ok || d.Err != nil {
			return fmt.Errorf("topic %s: %v", name, d.Err)
		}
		v := topicView{Topic: name, ID: kafkaUUID(d.ID), Configs: map[string]string{}}
		for _, p := range d.Partitions.Sorted() {
			pv := partitionView{Partition: p.Partition, Leader: p.Leader, Epoch: p.LeaderEpoch, Replicas: p.Replicas, InSync: p.ISR}
			if p.Err != nil {
				pv.Error = p.Err.Error()
			}
			v.Partitions = append(v.Partitions, pv)
		}
		if rc, err := configs.On(name, nil); err == nil {
			for _, c := range rc.Configs {
				if c.Value != nil && c.Source == kmsg.ConfigSourceDynamicTopicConfig { // set on this topic, not a default
					v.Configs[c.Key] = *c.Value
				}
				if all {
					v.AllConfigs = append(v.AllConfigs, configViewOf(c))
				}
			}
			sort.Slice(v.AllConfigs, func(i, j int) bool { return v.AllConfigs[i].Name < v.AllConfigs[j].Name })
		}
		views = append(views, v)
	}
	growths := topicGrowths(ctx, adm)
	for i := range views {
		views[i].Growth = growths[views[i].Topic]
	}
	if e.json {
		return printJSON(e.out, views)
	}
	for i, v := range views {
		if i > 0 {
			_, _ = fmt.Fprintln(e.out)
		}
		_, _ = fmt.Fprintf(e.out, "topic %s (id %s)\n", v.Topic, v.ID)
		keys := make([]string, 0, len(v.Configs))
		for k := range v.Configs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !all {
			for _, k := range keys {
				_, _ = fmt.Fprintf(e.out, "  %s=%s\n", k, v.Configs[k])
			}
		} else if err := printConfigs(e.out, v.AllConfigs); err != nil {
			return err
		}
		var cells [][]string
		for _, p := range v.Partitions {
			cells = append(cells, []string{strconv.Itoa(int(p.Partition)), strconv.Itoa(int(p.Leader)), strconv.Itoa(int(p.Epoch)), joinNumbers(p.Replicas), joinNumbers(p.InSync), p.Error})
		}
		if err := printTable(e.out, []string{"PARTITION", "LEADER", "EPOCH", "REPLICAS", "IN SYNC", "ERROR"}, cells); err != nil {
			return err
		}
		printGrowth(e.out, v.Growth, time.Now())
	}
	return nil
}

// configView is one config as describe --all shows it.
type configView struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Source    string `json:"source"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// configSources name Kafka's config sources as kafka-configs.sh users
// read them.
var configSources = map[kmsg.ConfigSource]string{
	kmsg.ConfigSourceDynamicTopicConfig:         "topic",
	kmsg.ConfigSourceDynamicBrokerConfig:        "broker",
	kmsg.ConfigSourceDynamicDefaultBrokerConfig: "cluster",
	kmsg.ConfigSourceStaticBrokerConfig:         "broker (static)",
	kmsg.ConfigSourceDefaultConfig:              "default",
}

func configViewOf(c kadm.Config) configView {
	v := configView{Name: c.Key, Source: configSources[c.Source], Sensitive: c.Sensitive}
	if v.Source == "" {
		v.Source = strings.ToLower(c.Source.String())
	}
	if c.Value != nil {
		v.Value = *c.Value
	}
	if c.Sensitive {
		v.Value = "(sensitive)"
	}
	return v
}

func printConfigs(w io.Writer, configs []configView) error {
	var cells [][]string
	for _, c := range configs {
		cells = append(cells, []string{"  " + c.Name, c.Value, c.Source})
	}
	return printTable(w, []string{"  CONFIG", "VALUE", "SOURCE"}, cells)
}

// topicGrowths asks the brokers' HTTP endpoints, the first that answers,
// for the ordered growths of every topic that had one.
func topicGrowths(ctx context.Context, adm *kadm.Client) map[string]*growth.Status {
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, addr := range httpEndpoints(ctx, adm, md) {
		all, err := brokerclient.Growths(cctx, addr, "")
		if err != nil {
			continue
		}
		out := map[string]*growth.Status{}
		for i := range all {
			out[all[i].Topic] = &all[i]
		}
		return out
	}
	return nil
}

// printGrowth shows a topic's ordered growths in progress and its last
// lift (docs/design/ordered-growth.md).
func printGrowth(out io.Writer, st *growth.Status, now time.Time) {
	if st == nil {
		return
	}
	for _, g := range st.Growths {
		if g.Hidden {
			_, _ = fmt.Fprintf(out, "growth %d: %d -> %d partitions, splitting (clients see %d); splits %s\n", g.Seq, g.From, g.To, g.From, joinNumbers(g.Splits))
			continue
		}
		_, _ = fmt.Fprintf(out, "growth %d: %d -> %d partitions, holding consumers for %s; holds %s, releases %s\n",
			g.Seq, g.From, g.To, now.Sub(g.HeldSince).Round(time.Second), joinNumbers(g.Holds), joinNumbers(g.Releases))
		if len(g.Draining) > 0 {
			_, _ = fmt.Fprintf(out, "  groups still draining the old partitions: %s\n", strings.Join(g.Draining, ", "))
		}
	}
	if l := st.LastLift; l != nil {
		_, _ = fmt.Fprintf(out, "last growth %d lifted (%s) at %s after %s; %d lifted at the bound in all\n",
			l.Seq, l.Reason, l.At.Format(time.RFC3339), (time.Duration(l.HeldMs) * time.Millisecond).Round(time.Millisecond), st.ForcedLifts)
	}
}

func topicAlterConfig(fs *pflag.FlagSet) runFunc {
	var sets []string
	fs.StringArrayVar(&sets, "set", nil, "set a config, key=value (repeat for more)")
	var deletes []string
	fs.StringArrayVar(&deletes, "delete", nil, "delete a config, which then takes its default (repeat for more)")
	return func(ctx context.Context, e *env, names []string) error {
		if len(names) != 1 || len(sets)+len(deletes) == 0 {
			return usagef("name one topic and at least one --set or --delete")
		}
		alter, err := alterOps(sets, deletes)
		if err != nil {
			return err
		}
		adm, done, err := e.admin(ctx)
		if err != nil {
			return err
		}
		defer done()
		resp, err := adm.AlterTopicConfigs(ctx, alter, names[0])
		if err != nil {
			return err
		}
		for _, r := range resp {
			if r.Err != nil {
				return refused(r.Err, r.ErrMessage)
			}
		}
		return e.report(map[string]any{"topic": names[0], "set": sets, "deleted": deletes}, "altered %d configs of topic %s", len(alter), names[0])
	}
}

func topicAddPartitions(fs *pflag.FlagSet) runFunc {
	partitions := fs.IntP("partitions", "p", 0, "the partitions the topic is to have in all (partitions only grow)")
	return func(ctx context.Context, e *env, names []string) error {
		if len(names) != 1 || *partitions <= 0 {
			return usagef("name one topic and the partitions it is to have in all")
		}
		adm, done, err := e.admin(ctx)
		if err != nil {
			return err
		}
		defer done()
		resp, err := adm.UpdatePartitions(ctx, *partitions, names[0])
		if err != nil {
			return err
		}
		if r := resp[names[0]]; r.Err != nil {
			return refused(r.Err, r.ErrMessage)
		}
		return e.report(map[string]any{"topic": names[0], "partitions": *partitions}, "topic %s has %d partitions", names[0], *partitions)
	}
}

func topicDelete(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("name at least one topic")
	}
	adm, done, err := e.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	resp, err := adm.DeleteTopics(ctx, args...)
	if err != nil {
		return err
	}
	var failed error
	deleted := []string{}
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			failed = fmt.Errorf("topic %s: %w", r.Topic, r.Err)
			continue
		}
		deleted = append(deleted, r.Topic)
		if !e.json {
			_, _ = fmt.Fprintf(e.out, "deleted topic %s\n", r.Topic)
		}
	}
	if e.json {
		if err := printJSON(e.out, map[string]any{"deleted": deleted}); err != nil {
			return err
		}
	}
	return failed
}

// kafkaUUID writes a topic id as Kafka's tools do (Uuid.toString):
// URL-safe base64 without padding.
func kafkaUUID(id kadm.TopicID) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
