package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
)

// Partition reassignment as kafka-reassign-partitions.sh does it: a plan
// in Kafka's JSON form, executed (AlterPartitionReassignments) and
// followed (ListPartitionReassignments) until every replica moved.

// reassignment is Kafka's reassignment file:
// {"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..]}]}.
type reassignment struct {
	Version    int                 `json:"version"`
	Partitions []reassignPartition `json:"partitions"`
}

type reassignPartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// clusterReassignPlan proposes a reassignment of topics' partitions over
// brokers, each partition keeping its replication factor, spread round
// robin from a start that moves with the partition (Kafka's --generate).
// It prints the plan; nothing moves until execute.
func clusterReassignPlan(fs *pflag.FlagSet) runFunc {
	var topics []string
	fs.StringArrayVarP(&topics, "topic", "t", nil, "a topic whose partitions to place (repeat for more)")
	var brokers []int32
	fs.Int32SliceVar(&brokers, "broker-ids", nil, "the ids of the brokers to place them on, comma-separated")
	return func(ctx context.Context, e *env, _ []string) error {
		if len(topics) == 0 || len(brokers) == 0 {
			return usagef("name the topics (--topic) and the brokers (--broker-ids)")
		}
		slices.Sort(brokers)
		brokers = slices.Compact(brokers)
		adm, done, err := e.admin(ctx)
		if err != nil {
			return err
		}
		defer done()
		details, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			return err
		}
		plan := reassignment{Version: 1, Partitions: []reassignPartition{}}
		for _, t := range topics {
			d := details[t]
			if d.Err != nil {
				return fmt.Errorf("topic %s: %w", t, d.Err)
			}
			for _, p := range d.Partitions.Sorted() {
				rf := len(p.Replicas)
				if rf > len(brokers) {
					return usagef("%s partition %d has %d replicas, more than the %d brokers named", t, p.Partition, rf, len(brokers))
				}
				replicas := make([]int32, rf)
				for r := range replicas {
					replicas[r] = brokers[(int(p.Partition)+r)%len(brokers)]
				}
				plan.Partitions = append(plan.Partitions, reassignPartition{t, p.Partition, replicas})
			}
		}
		return printJSON(e.out, plan)
	}
}

// readReassignment reads a plan from a file, or stdin for "-".
func readReassignment(e *env, path string) (reassignment, error) {
	in := e.in
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return reassignment{}, usagef("%v", err)
		}
		defer f.Close()
		in = f
	}
	var plan reassignment
	if err := json.NewDecoder(in).Decode(&plan); err != nil {
		return reassignment{}, usagef("%s: not a reassignment file (%v)", path, err)
	}
	if len(plan.Partitions) == 0 {
		return reassignment{}, usagef("%s names no partition", path)
	}
	return plan, nil
}

// clusterReassignExecute starts the moves a plan names and, with --wait,
// follows them until every one completed.
func clusterReassignExecute(fs *pflag.FlagSet) runFunc {
	wait := fs.Bool("wait", false, "follow the moves until every one completed, printing their progress on stderr")
	timeout := fs.Duration("timeout", 30*time.Minute, "with --wait, how long to follow them")
	return func(ctx context.Context, e *env, args []string) error {
		plan, adm, done, err := applyPlan(ctx, e, args[0], false)
		if err != nil {
			return err
		}
		defer done()
		_, _ = fmt.Fprintf(e.errOut, "raftka cluster reassign: started moving %s\n", plural(len(plan.Partitions), "partition"))
		if !*wait {
			return e.report(map[string]any{"started": len(plan.Partitions)}, "started; raftka cluster reassign status follows the moves")
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		for {
			left, err := movesLeft(ctx, adm, plan)
			if err != nil {
				return fmt.Errorf("following the moves: %w", err)
			}
			if left == 0 {
				return e.report(map[string]any{"completed": len(plan.Partitions)}, "every move completed")
			}
			_, _ = fmt.Fprintf(e.errOut, "raftka cluster reassign: %s still moving\n", plural(left, "partition"))
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s still moving after --timeout %v", plural(left, "partition"), *timeout)
			case <-time.After(2 * time.Second):
			}
		}
	}
}

// movesLeft counts the plan's partitions that are not yet on the replicas
// it names, as the brokers' metadata shows them.
func movesLeft(ctx context.Context, adm *kadm.Client, plan reassignment) (int, error) {
	var topics []string
	for _, p := range plan.Partitions {
		topics = append(topics, p.Topic)
	}
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return 0, err
	}
	left := 0
	for _, p := range plan.Partitions {
		now := details[p.Topic].Partitions[p.Partition]
		if !slices.Equal(now.Replicas, p.Replicas) {
			left++
		}
	}
	return left, nil
}

// clusterReassignCancel stops the moves a plan names; the replicas stay
// where they were.
func clusterReassignCancel(ctx context.Context, e *env, args []string) error {
	plan, _, done, err := applyPlan(ctx, e, args[0], true)
	if err != nil {
		return err
	}
	defer done()
	return e.report(map[string]any{"cancelled": len(plan.Partitions)}, "cancelled the moves of %s", plural(len(plan.Partitions), "partition"))
}

// applyPlan reads the plan at path and starts its moves, or cancels them;
// done closes the client.
func applyPlan(ctx context.Context, e *env, path string, cancel bool) (reassignment, *kadm.Client, func(), error) {
	plan, err := readReassignment(e, path)
	if err != nil {
		return plan, nil, nil, err
	}
	adm, done, err := e.admin(ctx)
	if err != nil {
		return plan, nil, nil, err
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, p := range plan.Partitions {
		if cancel {
			req.CancelAssign(p.Topic, p.Partition)
		} else {
			req.Assign(p.Topic, p.Partition, p.Replicas)
		}
	}
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		for _, r := range resp.Sorted() {
			if r.Err != nil {
				err = fmt.Errorf("%s partition %d: %w", r.Topic, r.Partition, refused(r.Err, r.ErrMessage))
				break
			}
		}
	}
	if err != nil {
		done()
		return plan, nil, nil, err
	}
	return plan, adm, done, nil
}

// clusterReassignStatus lists the moves in progress.
func clusterReassignStatus(ctx context.Context, e *env, _ []string) error {
	adm, done, err := e.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	moving, err := adm.ListPartitionReassignments(ctx, nil)
	if err != nil {
		return err
	}
	rows := moving.Sorted()
	if e.json {
		type row struct {
			Topic     string  `json:"topic"`
			Partition int32   `json:"partition"`
			Replicas  []int32 `json:"replicas"`
			Adding    []int32 `json:"adding"`
			Removing  []int32 `json:"removing"`
		}
		out := []row{}
		for _, r := range rows {
			out = append(out, row{r.Topic, r.Partition, r.Replicas, r.AddingReplicas, r.RemovingReplicas})
		}
		return printJSON(e.out, out)
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(e.out, "no partition is moving")
		return err
	}
	var cells [][]string
	for _, r := range rows {
		cells = append(cells, []string{r.Topic, strconv.Itoa(int(r.Partition)), joinNumbers(r.Replicas), joinNumbers(r.AddingReplicas), joinNumbers(r.RemovingReplicas)})
	}
	return printTable(e.out, []string{"TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING"}, cells)
}
