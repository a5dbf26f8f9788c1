package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/internal/brokerclient"
)

// The cluster's admin commands that Kafka's tools and rpk have, each a
// thin form of one Kafka API the brokers serve.

// partitionFlags select partitions: those of one --topic, all or some.
type partitionFlags struct {
	topic      string
	partitions []int32
}

func newPartitionFlags(fs *pflag.FlagSet, what string) *partitionFlags {
	f := &partitionFlags{}
	fs.StringVarP(&f.topic, "topic", "t", "", what)
	fs.Int32SliceVarP(&f.partitions, "partition", "p", nil, "only these partitions of --topic (comma-separated or repeated); default: all")
	return f
}

// set is the partitions as kadm names them; every partition of the topic
// when none is named, as the brokers list them.
func (f *partitionFlags) set(ctx context.Context, adm *kadm.Client) (kadm.TopicsSet, error) {
	if f.topic == "" {
		if len(f.partitions) > 0 {
			return nil, usagef("--partition needs --topic")
		}
		return nil, nil
	}
	partitions := f.partitions
	if len(partitions) == 0 {
		d, err := describeTopic(ctx, adm, f.topic)
		if err != nil {
			return nil, err
		}
		partitions = d.partitions
	}
	set := kadm.TopicsSet{}
	set.Add(f.topic, partitions...)
	return set, nil
}

// clusterDeleteRecords removes a topic's records below an offset, as
// kafka-delete-records.sh and rpk topic trim-prefix do.
func clusterDeleteRecords(fs *pflag.FlagSet) runFunc {
	sel := newPartitionFlags(fs, "the topic whose records go")
	before := fs.String("before", "", "remove the records before this: "+positionForms)
	return func(ctx context.Context, e *env, _ []string) error {
		if sel.topic == "" || *before == "" {
			return usagef("name the topic (--topic) and where the records are to start (--before)")
		}
		to, err := parsePosition("--before", *before)
		if err != nil {
			return err
		}
		adm, done, err := e.admin(ctx)
		if err != nil {
			return err
		}
		defer done()
		set, err := sel.set(ctx, adm)
		if err != nil {
			return err
		}
		listed, err := to.resolve(ctx, adm, sel.topic)
		if err != nil {
			return err
		}
		offsets := kadm.Offsets{}
		for _, p := range set.Sorted()[0].Partitions {
			if o, ok := listed.Lookup(sel.topic, p); ok {
				offsets.Add(kadm.Offset{Topic: sel.topic, Partition: p, At: o.Offset, LeaderEpoch: -1})
			}
		}
		resp, err := adm.DeleteRecords(ctx, offsets)
		if err != nil {
			return err
		}
		type row struct {
			Partition int32 `json:"partition"`
			LogStart  int64 `json:"logStart"`
		}
		var rows []row
		for _, r := range resp.Sorted() {
			if r.Err != nil {
				return fmt.Errorf("%s partition %d: %w", r.Topic, r.Partition, refused(r.Err, ""))
			}
			rows = append(rows, row{r.Partition, r.LowWatermark})
		}
		if e.json {
			return printJSON(e.out, map[string]any{"topic": sel.topic, "partitions": rows})
		}
		var cells [][]string
		for _, r := range rows {
			cells = append(cells, []string{strconv.Itoa(int(r.Partition)), strconv.FormatInt(r.LogStart, 10)})
		}
		return printTable(e.out, []string{"PARTITION", "LOG START"}, cells)
	}
}

// clusterElectLeaders moves leadership to each partition's first replica
// (preferred), or recovers a partition that lost a quorum of its replicas'
// data (unclean), as kafka-leader-election.sh does.
func clusterElectLeaders(fs *pflag.FlagSet) runFunc {
	sel := newPartitionFlags(fs, "only this topic's partitions; default: every partition (preferred only)")
	how := fs.String("type", "preferred", "preferred, or unclean: restart a partition that lost a quorum of its replicas from its most up-to-date survivor, reporting what is kept and what is gone")
	return func(ctx context.Context, e *env, _ []string) error {
		kind := map[string]kadm.ElectLeadersHow{"preferred": kadm.ElectPreferredReplica, "unclean": kadm.ElectLiveReplica}
		electHow, ok := kind[*how]
		if !ok {
			return usagef("--type %s: want preferred or unclean", *how)
		}
		if *how == "unclean" && sel.topic == "" {
			return usagef("an unclean election names its partitions: --topic and --partition")
		}
		adm, done, err := e.admin(ctx)
		if err != nil {
			return err
		}
		defer done()
		set, err := sel.set(ctx, adm)
		if err != nil {
			return err
		}
		results, err := adm.ElectLeaders(ctx, electHow, set)
		if err != nil {
			return err
		}
		type row struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Leader    int32  `json:"leader,omitempty"`
			Error     string `json:"error,omitempty"`
			Report    string `json:"report,omitempty"`
		}
		var rows []row
		failed := 0
		for _, ps := range results {
			for _, r := range ps {
				rw := row{Topic: r.Topic, Partition: r.Partition}
				switch {
				case errors.Is(r.Err, kerr.ElectionNotNeeded) && *how == "unclean":
					rw.Report = "not needed: " + cmp.Or(r.ErrMessage, "it has a leader, nothing to recover")
				case errors.Is(r.Err, kerr.ElectionNotNeeded):
					rw.Report = "not needed: " + cmp.Or(r.ErrMessage, "the preferred replica leads already")
				case r.Err != nil:
					rw.Error = refused(r.Err, r.ErrMessage).Error()
					failed++
				case r.ErrMessage != "":
					rw.Report = "recovered: " + r.ErrMessage // an unclean election's report
				}
				rows = append(rows, rw)
			}
		}
		slices.SortFunc(rows, func(a, b row) int {
			return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		if e.json {
			if err := printJSON(e.out, rows); err != nil {
				return err
			}
		} else {
			var cells [][]string
			for _, r := range rows {
				cells = append(cells, []string{r.Topic, strconv.Itoa(int(r.Partition)), cmp.Or(r.Error, r.Report, "elected")})
			}
			if err := printTable(e.out, []string{"TOPIC", "PARTITION", "RESULT"}, cells); err != nil {
				return err
			}
		}
		if failed > 0 {
			return fmt.Errorf("%s not elected", plural(failed, "partition"))
		}
		return nil
	}
}

// clusterLogDirs shows where each broker keeps each partition and its
// size (kafka-log-dirs.sh --describe).
func clusterLogDirs(fs *pflag.FlagSet) runFunc {
	sel := newPartitionFlags(fs, "only this topic's partitions")
	return func(ctx context.Context, e *env, _ []string) error {
		adm, done, err := e.admin(ctx)
		if err != nil {
			return err
		}
		defer done()
		set, err := sel.set(ctx, adm)
		if err != nil {
			return err
		}
		dirs, err := adm.DescribeAllLogDirs(ctx, set)
		if err != nil {
			return err
		}
		type row struct {
			Broker    int32  `json:"broker"`
			Dir       string `json:"dir"`
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Size      int64  `json:"size"`
			Error     string `json:"error,omitempty"`
		}
		rows := []row{}
		dirs.Each(func(d kadm.DescribedLogDir) {
			if d.Err != nil {
				rows = append(rows, row{Broker: d.Broker, Dir: d.Dir, Partition: -1, Error: d.Err.Error()})
			}
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				rows = append(rows, row{Broker: p.Broker, Dir: p.Dir, Topic: p.Topic, Partition: p.Partition, Size: p.Size})
			})
		})
		slices.SortFunc(rows, func(a, b row) int {
			return cmp.Or(cmp.Compare(a.Broker, b.Broker), strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		if e.json {
			return printJSON(e.out, rows)
		}
		var cells [][]string
		for _, r := range rows {
			cells = append(cells, []string{strconv.Itoa(int(r.Broker)), r.Dir, r.Topic, strconv.Itoa(int(r.Partition)), strconv.FormatInt(r.Size, 10), r.Error})
		}
		return printTable(e.out, []string{"BROKER", "DIR", "TOPIC", "PARTITION", "SIZE", "ERROR"}, cells)
	}
}

// brokerID reads a broker id argument.
func brokerID(arg string) (int32, error) {
	id, err := strconv.ParseInt(arg, 10, 32)
	if err != nil || id < 0 {
		return 0, usagef("%q: want a broker id", arg)
	}
	return int32(id), nil
}

// brokerCall is one request about one broker, named by the command's
// argument: what unregister and the voter changes send.
type brokerCall func(ctx context.Context, r kmsg.Requestor, id int32) error

// onBroker runs call for the broker args[0] names and reports done.
func onBroker(call brokerCall, done string) runFunc {
	return func(ctx context.Context, e *env, args []string) error {
		id, err := brokerID(args[0])
		if err != nil {
			return err
		}
		cl, err := e.client(ctx)
		if err != nil {
			return err
		}
		defer cl.Close()
		if err := call(ctx, cl, id); err != nil {
			return err
		}
		return e.report(map[string]any{"broker": id, "done": fmt.Sprintf(done, id)}, done, id)
	}
}

// clusterQuorum shows the metadata group's leader, voters and observers
// (kafka-metadata-quorum.sh describe).
func clusterQuorum(ctx context.Context, e *env, _ []string) error {
	cl, err := e.client(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	q, err := brokerclient.ReadQuorum(ctx, cl)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.out, map[string]any{"leader": q.Leader, "voters": q.Voters, "observers": q.Observers})
	}
	return printTable(e.out, []string{"LEADER", "VOTERS", "OBSERVERS"},
		[][]string{{strconv.Itoa(int(q.Leader)), joinNumbers(q.Voters), joinNumbers(q.Observers)}})
}

// clusterBrokerConfigs shows broker configs: one broker's, or with no id
// the ones set for every broker.
func clusterBrokerConfigs(ctx context.Context, e *env, args []string) error {
	var ids []int32
	for _, a := range args {
		id, err := brokerID(a)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	adm, done, err := e.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	described, err := adm.DescribeBrokerConfigs(ctx, ids...)
	if err != nil {
		return err
	}
	type brokerConfigs struct {
		Broker  string       `json:"broker"`
		Configs []configView `json:"configs"`
	}
	var out []brokerConfigs
	for _, rc := range described {
		if rc.Err != nil {
			return refused(rc.Err, rc.ErrMessage)
		}
		b := brokerConfigs{Broker: cmp.Or(rc.Name, "every broker"), Configs: []configView{}}
		for _, c := range rc.Configs {
			b.Configs = append(b.Configs, configViewOf(c))
		}
		out = append(out, b)
	}
	if e.json {
		return printJSON(e.out, out)
	}
	for _, b := range out {
		_, _ = fmt.Fprintf(e.out, "broker %s\n", b.Broker)
		if err := printConfigs(e.out, b.Configs); err != nil {
			return err
		}
	}
	return nil
}

// clusterAlterBrokerConfigs sets or deletes broker configs (the
// replication throttles), of one broker or of every broker.
func clusterAlterBrokerConfigs(fs *pflag.FlagSet) runFunc {
	var sets, deletes []string
	fs.StringArrayVar(&sets, "set", nil, "set a config, key=value (repeat for more)")
	fs.StringArrayVar(&deletes, "delete", nil, "delete a config (repeat for more)")
	return func(ctx context.Context, e *env, args []string) error {
		if len(sets)+len(deletes) == 0 {
			return usagef("name at least one --set or --delete")
		}
		var ids []int32
		for _, a := range args {
			id, err := brokerID(a)
			if err != nil {
				return err
			}
			ids = append(ids, id)
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
		resp, err := adm.AlterBrokerConfigs(ctx, alter, ids...)
		if err != nil {
			return err
		}
		for _, r := range resp {
			if r.Err != nil {
				return refused(r.Err, r.ErrMessage)
			}
		}
		who := "every broker"
		if len(ids) > 0 {
			who = "broker " + joinNumbers(ids)
		}
		return e.report(map[string]any{"brokers": ids, "altered": len(alter)}, "altered %d configs of %s", len(alter), who)
	}
}
