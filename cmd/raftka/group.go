package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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
	shift := fs.Int64("shift", 0, "move each committed offset by N (negative: back), within the partition's records")
	var topics []string
	fs.StringArrayVarP(&topics, "topic", "t", nil, "only this topic's partitions (repeat for more); default: the topics the group committed on")
	var partitions []int32
	fs.Int32SliceVarP(&partitions, "partition", "p", nil, "only these partitions (with one --topic; comma-separated or repeated)")
	clamp := fs.Bool("clamp", false, "move an offset past the end (or below the start) of a partition to its end (or start), rather than refuse")
	dryRun := fs.Bool("dry-run", false, "print the offsets, and commit nothing")
	return func(ctx context.Context, e *env, groups []string) error {
		s := seek{group: groups[0], topics: topics, partitions: partitions, shift: *shift, clamp: *clamp}
		switch {
		case (*toFlag == "") == (*shift == 0):
			return usagef("give --to or --shift, one of them")
		case len(partitions) > 0 && len(topics) != 1:
			return usagef("--partition needs exactly one --topic")
		}
		if *toFlag != "" {
			to, err := parsePosition("--to", *toFlag)
			if err != nil {
				return err
			}
			s.to = &to
		}
		adm, done, err := e.admin(ctx)
		if err != nil {
			return err
		}
		defer done()
		moves, err := s.plan(ctx, adm)
		if err != nil {
			return err
		}
		if !*dryRun {
			offsets := kadm.Offsets{}
			for _, m := range moves {
				offsets.Add(kadm.Offset{Topic: m.Topic, Partition: m.Partition, At: m.To, LeaderEpoch: -1})
			}
			resp, err := adm.CommitOffsets(ctx, s.group, offsets)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				return err
			}
		}
		return s.print(e, moves, *dryRun)
	}
}

// seek is what group seek was asked: the group, the partitions, and where
// to: a position (--to) or a shift from the committed offsets.
type seek struct {
	group      string
	topics     []string
	partitions []int32
	to         *position
	shift      int64
	clamp      bool
}

// move is one partition's committed offset, from and to.
type move struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
	// Clamped: the offset asked for was outside the partition's records.
	Clamped bool `json:"clamped,omitempty"`
}

// plan reads the group and the partitions' bounds and gives the moves,
// refusing an offset outside a partition's records unless s.clamp (a
// shift, as Kafka's tool does, is always kept within them).
func (s seek) plan(ctx context.Context, adm *kadm.Client) ([]move, error) {
	described, err := adm.DescribeGroups(ctx, s.group)
	if err != nil {
		return nil, err
	}
	if g, ok := described[s.group]; ok && g.Err == nil && len(g.Members) > 0 {
		return nil, fmt.Errorf("group %s has %d members (state %s): stop its consumers first, then seek", s.group, len(g.Members), g.State)
	}
	before, err := adm.FetchOffsets(ctx, s.group)
	if err != nil {
		return nil, err
	}
	topics := s.topics
	if len(topics) == 0 {
		for t := range before {
			topics = append(topics, t)
		}
		if len(topics) == 0 {
			return nil, usagef("group %s has committed no offsets: name the topics with --topic", s.group)
		}
	}
	sort.Strings(topics)
	starts, err := listSettled(ctx, func() (kadm.ListedOffsets, error) { return adm.ListStartOffsets(ctx, topics...) })
	if err != nil {
		return nil, err
	}
	ends, err := listSettled(ctx, func() (kadm.ListedOffsets, error) { return adm.ListEndOffsets(ctx, topics...) })
	if err != nil {
		return nil, err
	}
	var target kadm.ListedOffsets
	if s.to != nil && s.to.kind != atOffset {
		if target, err = s.to.resolve(ctx, adm, topics...); err != nil {
			return nil, err
		}
	}
	var listed []kadm.ListedOffset
	ends.Each(func(o kadm.ListedOffset) { listed = append(listed, o) })
	slices.SortFunc(listed, func(a, b kadm.ListedOffset) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	var moves []move
	for _, end := range listed {
		if len(s.partitions) > 0 && !slices.Contains(s.partitions, end.Partition) {
			continue
		}
		m := move{Topic: end.Topic, Partition: end.Partition, From: -1}
		if c, ok := before.Lookup(end.Topic, end.Partition); ok && c.Err == nil {
			m.From = c.At
		}
		start, _ := starts.Lookup(end.Topic, end.Partition)
		want, err := s.want(m, target)
		if err != nil {
			return nil, err
		}
		m.To = min(max(want, start.Offset), end.Offset)
		if m.Clamped = m.To != want; m.Clamped && s.to != nil && !s.clamp {
			return nil, fmt.Errorf("offset %d is outside %s partition %d's records, %d to %d: --clamp moves it to the nearer bound", want, end.Topic, end.Partition, start.Offset, end.Offset)
		}
		moves = append(moves, m)
	}
	if len(moves) == 0 {
		return nil, fmt.Errorf("no partition matched: %v of %s", s.partitions, strings.Join(topics, ", "))
	}
	return moves, nil
}

// want is where the seek asks m's partition to go, before clamping.
func (s seek) want(m move, target kadm.ListedOffsets) (int64, error) {
	switch {
	case s.to == nil:
		if m.From < 0 {
			return 0, fmt.Errorf("group %s has no committed offset on %s partition %d to shift from", s.group, m.Topic, m.Partition)
		}
		return m.From + s.shift, nil
	case s.to.kind == atOffset:
		return s.to.offset, nil
	}
	o, _ := target.Lookup(m.Topic, m.Partition)
	return o.Offset, nil
}

func (s seek) print(e *env, moves []move, dryRun bool) error {
	if e.json {
		return printJSON(e.out, map[string]any{"group": s.group, "dryRun": dryRun, "offsets": moves})
	}
	var cells [][]string
	for _, m := range moves {
		note := ""
		if m.Clamped {
			note = "clamped"
		}
		cells = append(cells, []string{m.Topic, strconv.Itoa(int(m.Partition)), strconv.FormatInt(m.From, 10), strconv.FormatInt(m.To, 10), note})
	}
	if dryRun {
		_, _ = fmt.Fprintf(e.out, "dry run: group %s's offsets would move\n", s.group)
	} else {
		_, _ = fmt.Fprintf(e.out, "group %s's offsets moved\n", s.group)
	}
	return printTable(e.out, []string{"TOPIC", "PARTITION", "FROM", "TO", ""}, cells)
}

// groupDelete deletes groups that have no members, and their offsets, as
// kafka-consumer-groups.sh --delete does.
func groupDelete(ctx context.Context, e *env, groups []string) error {
	adm, done, err := e.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	resp, err := adm.DeleteGroups(ctx, groups...)
	if err != nil {
		return err
	}
	deleted := []string{}
	var failed error
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			failed = fmt.Errorf("group %s: %w", r.Group, refused(r.Err, groupRefusal(r.Err)))
			continue
		}
		deleted = append(deleted, r.Group)
		if !e.json {
			_, _ = fmt.Fprintf(e.out, "deleted group %s\n", r.Group)
		}
	}
	if e.json {
		if err := printJSON(e.out, map[string]any{"deleted": deleted}); err != nil {
			return err
		}
	}
	return failed
}

// groupRefusal says what a group's refusal means for the one who asked.
func groupRefusal(err error) string {
	switch {
	case errors.Is(err, kerr.NonEmptyGroup):
		return "the group has members: stop its consumers first"
	case errors.Is(err, kerr.GroupSubscribedToTopic):
		return "a member of the group consumes the topic: stop its consumers first"
	case errors.Is(err, kerr.GroupIDNotFound):
		return "the group does not exist"
	}
	return ""
}

// groupOffsetDelete deletes a group's committed offsets on a topic's
// partitions (kafka-consumer-groups.sh --delete-offsets): the group then
// starts those partitions where its auto.offset.reset says.
func groupOffsetDelete(fs *pflag.FlagSet) runFunc {
	topic := fs.StringP("topic", "t", "", "the topic whose offsets go")
	var partitions []int32
	fs.Int32SliceVarP(&partitions, "partition", "p", nil, "only these partitions (comma-separated or repeated); default: all the group committed on the topic")
	return func(ctx context.Context, e *env, groups []string) error {
		if *topic == "" {
			return usagef("name the topic with --topic")
		}
		adm, done, err := e.admin(ctx)
		if err != nil {
			return err
		}
		defer done()
		if len(partitions) == 0 {
			committed, err := adm.FetchOffsets(ctx, groups[0])
			if err != nil {
				return err
			}
			for p := range committed[*topic] {
				partitions = append(partitions, p)
			}
			if len(partitions) == 0 {
				return fmt.Errorf("group %s has no committed offset on %s", groups[0], *topic)
			}
		}
		slices.Sort(partitions)
		set := kadm.TopicsSet{}
		set.Add(*topic, partitions...)
		resp, err := adm.DeleteOffsets(ctx, groups[0], set)
		if err != nil {
			return refused(err, groupRefusal(err))
		}
		for _, p := range partitions {
			if err := resp[*topic][p]; err != nil {
				return fmt.Errorf("%s partition %d: %w", *topic, p, refused(err, groupRefusal(err)))
			}
		}
		return e.report(map[string]any{"group": groups[0], "topic": *topic, "partitions": partitions},
			"deleted group %s's offsets on %s partitions %s", groups[0], *topic, joinNumbers(partitions))
	}
}
