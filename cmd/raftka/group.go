package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/internal/lag"
)

func groupList(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		return usagef("no arguments")
	}
	adm, done, err := e.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return err
	}
	type row struct {
		Group        string `json:"group"`
		State        string `json:"state"`
		ProtocolType string `json:"protocolType"`
	}
	rows := []row{}
	for _, g := range listed.Sorted() {
		rows = append(rows, row{g.Group, g.State, g.ProtocolType})
	}
	if e.json {
		return printJSON(e.out, rows)
	}
	var cells [][]string
	for _, r := range rows {
		cells = append(cells, []string{r.Group, r.State, r.ProtocolType})
	}
	return printTable(e.out, []string{"GROUP", "STATE", "PROTOCOL TYPE"}, cells)
}

// partitionLag is one partition of a group as group describe shows it.
type partitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
	Member    string `json:"member,omitempty"`
	Client    string `json:"clientId,omitempty"`
	Host      string `json:"host,omitempty"`
}

type groupView struct {
	Group      string         `json:"group"`
	State      string         `json:"state"`
	Members    int            `json:"members"`
	TotalLag   int64          `json:"totalLag"`
	Partitions []partitionLag `json:"partitions"`
}

// describeGroup reads a group's members and lag. The lag counts records
// to consume: the offsets of transaction markers and aborted records
// between the group's position and the end are left out (internal/lag).
func describeGroup(ctx context.Context, cl *kgo.Client, group string) (groupView, error) {
	lags, err := kadm.NewClient(cl).Lag(ctx, group)
	if err != nil {
		return groupView{}, err
	}
	l, ok := lags[group]
	if !ok {
		return groupView{}, fmt.Errorf("group %s: not described", group)
	}
	if err := l.Error(); err != nil {
		return groupView{}, fmt.Errorf("group %s: %w", group, err)
	}
	if l.State == "Dead" && len(l.Members) == 0 && len(l.Lag) == 0 {
		// Kafka describes a group it does not know as Dead.
		return groupView{}, fmt.Errorf("group %s does not exist: no members and no committed offsets", group)
	}
	v := groupView{Group: group, State: l.State, Members: len(l.Members), Partitions: []partitionLag{}}
	var spans []lag.Span
	for _, m := range l.Lag.Sorted() {
		if m.Lag > 0 {
			spans = append(spans, lag.Span{Topic: m.Topic, Partition: m.Partition, From: m.End.Offset - m.Lag, End: m.End.Offset})
		}
	}
	skipped := lag.Skipped(ctx, cl, spans)
	for _, m := range l.Lag.Sorted() {
		if m.Lag > 0 {
			m.Lag -= skipped[m.Topic][m.Partition]
		}
		p := partitionLag{Topic: m.Topic, Partition: m.Partition, Committed: m.Commit.At, End: m.End.Offset, Lag: m.Lag}
		if m.Member != nil {
			p.Member, p.Client, p.Host = m.Member.MemberID, m.Member.ClientID, m.Member.ClientHost
		}
		if m.Lag > 0 {
			v.TotalLag += m.Lag
		}
		v.Partitions = append(v.Partitions, p)
	}
	return v, nil
}

func groupDescribe(ctx context.Context, e *env, args []string) error {
	if len(args) != 1 {
		return usagef("name one group")
	}
	cl, err := e.client(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	v, err := describeGroup(ctx, cl, args[0])
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.out, v)
	}
	_, _ = fmt.Fprintf(e.out, "group %s: %s, %d members, lag %d\n", v.Group, v.State, v.Members, v.TotalLag)
	var cells [][]string
	for _, p := range v.Partitions {
		cells = append(cells, []string{p.Topic, strconv.Itoa(int(p.Partition)), strconv.FormatInt(p.Committed, 10), strconv.FormatInt(p.End, 10),
			strconv.FormatInt(p.Lag, 10), p.Client, p.Host})
	}
	return printTable(e.out, []string{"TOPIC", "PARTITION", "COMMITTED", "END", "LAG", "CLIENT", "HOST"}, cells)
}

// groupSeek moves a group's committed offsets, as kafka-consumer-groups.sh
// --reset-offsets does: only while the group has no members, whose own
// commits would otherwise undo it.
func groupSeek(fs *pflag.FlagSet) runFunc {
	toFlag := fs.String("to", "", "where to move the offsets: "+positionForms)
	var topics []string
	fs.StringArrayVarP(&topics, "topic", "t", nil, "only this topic's partitions (repeat for more); default: the topics the group committed on")
	dryRun := fs.Bool("dry-run", false, "print the offsets, and commit nothing")
	return func(ctx context.Context, e *env, groups []string) error {
		if len(groups) != 1 || *toFlag == "" {
			return usagef("name one group and --to")
		}
		to, err := parsePosition("--to", *toFlag)
		if err != nil {
			return err
		}
		group := groups[0]
		adm, done, err := e.admin(ctx)
		if err != nil {
			return err
		}
		defer done()
		described, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		if g, ok := described[group]; ok && g.Err == nil && len(g.Members) > 0 {
			return fmt.Errorf("group %s has %d members (state %s): stop its consumers first, then seek", group, len(g.Members), g.State)
		}
		if len(topics) == 0 {
			committed, err := adm.FetchOffsets(ctx, group)
			if err != nil {
				return err
			}
			for t := range committed {
				topics = append(topics, t)
			}
			if len(topics) == 0 {
				return usagef("group %s has committed no offsets: name the topics with --topic", group)
			}
		}
		sort.Strings(topics)
		target, err := to.resolve(ctx, adm, topics...)
		if err != nil {
			return err
		}
		before, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		offsets := kadm.Offsets{}
		type move struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			From      int64  `json:"from"`
			To        int64  `json:"to"`
		}
		var moves []move
		var listed []kadm.ListedOffset
		target.Each(func(o kadm.ListedOffset) { listed = append(listed, o) })
		sort.Slice(listed, func(i, j int) bool {
			return listed[i].Topic < listed[j].Topic || listed[i].Topic == listed[j].Topic && listed[i].Partition < listed[j].Partition
		})
		for _, o := range listed {
			from := int64(-1)
			if c, ok := before.Lookup(o.Topic, o.Partition); ok && c.Err == nil {
				from = c.At
			}
			offsets.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
			moves = append(moves, move{o.Topic, o.Partition, from, o.Offset})
		}
		if !*dryRun {
			resp, err := adm.CommitOffsets(ctx, group, offsets)
			if err != nil {
				return err
			}
			if err := resp.Error(); err != nil {
				return err
			}
		}
		if e.json {
			return printJSON(e.out, map[string]any{"group": group, "dryRun": *dryRun, "offsets": moves})
		}
		var cells [][]string
		for _, m := range moves {
			cells = append(cells, []string{m.Topic, strconv.Itoa(int(m.Partition)), strconv.FormatInt(m.From, 10), strconv.FormatInt(m.To, 10)})
		}
		if *dryRun {
			_, _ = fmt.Fprintf(e.out, "dry run: group %s's offsets would move\n", group)
		} else {
			_, _ = fmt.Fprintf(e.out, "group %s's offsets moved\n", group)
		}
		return printTable(e.out, []string{"TOPIC", "PARTITION", "FROM", "TO"}, cells)
	}
}
