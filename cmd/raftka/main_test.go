package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

// raftka runs the command in-process against the test cluster.
func raftka(t *testing.T, c *brokertest.Cluster, stdin string, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(append([]string{"-b", strings.Join(c.Bootstrap(), ",")}, args...), strings.NewReader(stdin), &o, &e)
	return code, o.String(), e.String()
}

func mustRaftka(t *testing.T, c *brokertest.Cluster, stdin string, args ...string) string {
	t.Helper()
	code, out, errOut := raftka(t, c, stdin, args...)
	if code != 0 {
		t.Fatalf("raftka %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// The commands against 3 real brokers: what they create, write and
// commit is checked in the cluster itself.
func TestCommandsAgainstRealBrokers(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	mustRaftka(t, c, "", "topic", "create", "orders", "--partitions", "3", "-r", "3", "--config", "retention.ms=3600000")
	details, err := c.Admin().ListTopics(ctx, "orders")
	if err != nil || len(details["orders"].Partitions) != 3 || details["orders"].Partitions.NumReplicas() != 3 {
		t.Fatalf("orders after topic create: %+v %v", details["orders"], err)
	}
	if code, _, errOut := raftka(t, c, "", "topic", "create", "orders"); code != exitFailed || !strings.Contains(errOut, "TOPIC_ALREADY_EXISTS") {
		t.Errorf("creating orders again: exit %d, %q", code, errOut)
	}

	var listed []struct {
		Topic             string
		Partitions        int
		ReplicationFactor int
	}
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "topic", "list")), &listed); err != nil || len(listed) != 1 || listed[0].Topic != "orders" || listed[0].Partitions != 3 || listed[0].ReplicationFactor != 3 {
		t.Fatalf("topic list: %+v %v", listed, err)
	}
	var described []topicView
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "topic", "describe", "orders")), &described); err != nil ||
		len(described) != 1 || len(described[0].Partitions) != 3 || described[0].Configs["retention.ms"] != "3600000" {
		t.Fatalf("topic describe: %+v %v", described, err)
	}
	if out := mustRaftka(t, c, "", "topic", "describe", "orders", "--all"); !regexp.MustCompile(`retention.ms\s+3600000\s+topic`).MatchString(out) ||
		!regexp.MustCompile(`cleanup.policy\s+delete\s+default`).MatchString(out) {
		t.Errorf("topic describe --all shows no config with its source:\n%s", out)
	}
	md, err := c.Admin().Metadata(ctx, "orders")
	id := md.Topics["orders"].ID
	if err != nil || described[0].ID != base64.RawURLEncoding.EncodeToString(id[:]) ||
		strings.ContainsAny(described[0].ID, "=+/") {
		t.Errorf("topic id printed as %q, want Kafka's form (URL-safe base64, unpadded) of the id Metadata gives (%v)", described[0].ID, err)
	}
	for _, p := range described[0].Partitions {
		if !slices.Contains(p.Replicas, p.Leader) || len(p.InSync) != 3 {
			t.Errorf("partition %+v", p)
		}
	}

	out := mustRaftka(t, c, "k1:one\nk1:two\nno key here\n", "produce", "orders", "-k", ":", "--header", "source=test")
	if !strings.Contains(out, "produced 3 records") {
		t.Errorf("produce said %q", out)
	}
	var got []consumed
	for _, line := range strings.Split(strings.TrimSpace(mustRaftka(t, c, "", "consume", "orders", "--exit", "-f", "json")), "\n") {
		var r consumed
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("consume line %q: %v", line, err)
		}
		got = append(got, r)
	}
	if len(got) != 3 {
		t.Fatalf("consumed %+v, want the 3 records", got)
	}
	var keyed []string
	for _, r := range got {
		if len(r.Headers) != 1 || r.Headers[0].Key != "source" || *r.Headers[0].Value != "test" {
			t.Errorf("record %+v lost its header", r)
		}
		if r.Key != nil && *r.Key == "k1" {
			keyed = append(keyed, *r.Value)
		} else if *r.Value != "no key here" {
			t.Errorf("record %+v", r)
		}
	}
	if !slices.Equal(keyed, []string{"one", "two"}) {
		t.Errorf("records of key k1 %v, want one then two (one partition, in order)", keyed)
	}

	// A group resumes where it committed.
	if out := mustRaftka(t, c, "", "consume", "orders", "--group", "readers", "--exit"); strings.Count(out, "\n") != 3 {
		t.Fatalf("the group's first read printed %q", out)
	}
	committed, err := c.Admin().FetchOffsets(ctx, "readers")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	committed.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != 3 {
		t.Errorf("the group committed offsets summing to %d, want 3", sum)
	}
	mustRaftka(t, c, "four\n", "produce", "orders")
	if out := mustRaftka(t, c, "", "consume", "orders", "--group", "readers", "--exit"); out != "four\n" {
		t.Errorf("the group's second read printed %q, want only the new record", out)
	}

	var groups []struct{ Group string }
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "group", "list")), &groups); err != nil || len(groups) != 1 || groups[0].Group != "readers" {
		t.Fatalf("group list: %+v %v", groups, err)
	}
	var described0 groupView
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "group", "describe", "readers")), &described0); err != nil || described0.TotalLag != 0 || len(described0.Partitions) != 3 {
		t.Fatalf("group describe: %+v %v", described0, err)
	}
	committedSum := func() int64 {
		committed, err := c.Admin().FetchOffsets(ctx, "readers")
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		committed.Each(func(o kadm.OffsetResponse) { sum += o.At })
		return sum
	}
	mustRaftka(t, c, "", "group", "seek", "readers", "--to", "start", "--dry-run")
	if sum := committedSum(); sum != 4 {
		t.Fatalf("a dry run moved the offsets: they sum to %d", sum)
	}
	mustRaftka(t, c, "", "group", "seek", "readers", "--to", "start")
	if sum := committedSum(); sum != 0 {
		t.Fatalf("after seeking to the start the offsets sum to %d", sum)
	}
	// Past the end: refused, unless clamped; a shift stays within the
	// records. Then a group of its own: seek commits its offsets, and
	// they go, then the group does.
	if code, _, errOut := raftka(t, c, "", "group", "seek", "readers", "--to", "99999"); code != exitFailed || !strings.Contains(errOut, "is outside orders partition") || !strings.Contains(errOut, "--clamp") {
		t.Errorf("seek past the end: exit %d, %q", code, errOut)
	}
	if sum := committedSum(); sum != 0 {
		t.Fatalf("a refused seek moved the offsets: they sum to %d", sum)
	}
	if out := mustRaftka(t, c, "", "group", "seek", "readers", "--to", "99999", "--clamp"); !strings.Contains(out, "clamped") || committedSum() != 4 {
		t.Fatalf("seek --clamp: %q, offsets summing to %d, want the ends (4)", out, committedSum())
	}
	mustRaftka(t, c, "", "group", "seek", "readers", "--shift", "-100")
	if sum := committedSum(); sum != 0 {
		t.Fatalf("after shifting back by 100 the offsets sum to %d, want the starts (0)", sum)
	}
	mustRaftka(t, c, "", "group", "seek", "readers", "--shift", "1", "--topic", "orders", "--partition", "0,1,2")
	mustRaftka(t, c, "", "group", "seek", "scratch", "--to", "end", "--topic", "orders")
	mustRaftka(t, c, "", "group", "offset-delete", "scratch", "--topic", "orders", "--partition", "0")
	if committed, err := c.Admin().FetchOffsets(ctx, "scratch"); err != nil || len(committed["orders"]) != 2 {
		t.Fatalf("scratch's offsets after offset-delete of partition 0: %v %v", committed, err)
	}
	mustRaftka(t, c, "", "group", "delete", "scratch")
	if code, _, errOut := raftka(t, c, "", "group", "describe", "scratch"); code != exitFailed || !strings.Contains(errOut, "does not exist") {
		t.Errorf("describe of a deleted group: exit %d, %q", code, errOut)
	}
	mustRaftka(t, c, "", "group", "seek", "readers", "--to", "start")

	// A group with a member is not moved: its own commits would undo it.
	member := c.Client(kgo.ConsumerGroup("readers"), kgo.ConsumeTopics("orders"))
	defer member.Close()
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	member.PollFetches(pctx)
	pcancel()
	if code, _, errOut := raftka(t, c, "", "group", "seek", "readers", "--to", "end"); code != exitFailed || !strings.Contains(errOut, "stop its consumers first") {
		t.Errorf("seek with a member: exit %d, %q", code, errOut)
	}
	member.Close()

	var grown struct {
		Topic      string
		Partitions int
	}
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "topic", "add-partitions", "orders", "--partitions", "4")), &grown); err != nil || grown.Partitions != 4 {
		t.Errorf("add-partitions -o json: %+v %v", grown, err)
	}
	var altered struct{ Set, Deleted []string }
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "topic", "alter-config", "orders", "--set", "retention.bytes=1048576", "--delete", "retention.ms")), &altered); err != nil ||
		!slices.Equal(altered.Set, []string{"retention.bytes=1048576"}) || !slices.Equal(altered.Deleted, []string{"retention.ms"}) {
		t.Errorf("alter-config -o json: %+v %v", altered, err)
	}
	described = nil
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "topic", "describe", "orders")), &described); err != nil ||
		len(described[0].Partitions) != 4 || described[0].Configs["retention.bytes"] != "1048576" || described[0].Configs["retention.ms"] != "" {
		t.Fatalf("after add-partitions and alter-config: %+v %v", described, err)
	}
	// The growth is ordered (on by default): describe shows it from the
	// brokers' HTTP endpoint, in progress or lifted.
	if g := described[0].Growth; g == nil || (len(g.Growths) == 0 && g.LastLift == nil) || (len(g.Growths) > 0 && g.Growths[0].To != 4) {
		t.Fatalf("growth of orders after add-partitions: %+v", g)
	}
	if text := mustRaftka(t, c, "", "topic", "describe", "orders"); !strings.Contains(text, "growth 1") {
		t.Fatalf("topic describe shows no growth:\n%s", text)
	}

	var info struct {
		Controller int32
		Brokers    []struct{ ID int32 }
	}
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "cluster", "info")), &info); err != nil || len(info.Brokers) != 3 {
		t.Fatalf("cluster info: %+v %v", info, err)
	}

	mustRaftka(t, c, "", "topic", "delete", "orders")
	// A broker that answers Metadata may apply the deletion a moment
	// after the one that answered DeleteTopics.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		details, err := c.Admin().ListTopics(ctx)
		if err == nil && len(details) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("topics after delete: %v %v", details.Names(), err)
		}
	}
}

// Mistakes in the command line exit 2 with the command's usage; what the
// cluster refuses, or a cluster that does not answer, exits 1 with what
// to do.
func TestCommandErrors(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 1})
	c.CreateTopic("four", 4, 1, nil)
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"topic", "frobnicate"}, exitUsage, "unknown command"},
		{[]string{"topic", "create"}, exitUsage, "name one topic\nRun 'raftka topic create --help' for usage."},
		{[]string{"topic", "create", "x", "--partitions", "many"}, exitUsage, `invalid argument "many" for "-p, --partitions" flag`},
		{[]string{"topic", "create", "x", "--partitions", "-2"}, exitUsage, "--partitions -2: want 1 or more, or -1 for the brokers' num.partitions"},
		{[]string{"topic", "create", "x", "-r", "0"}, exitUsage, "--replication-factor 0: want 1 or more"},
		{[]string{"topic", "list", "extra"}, exitUsage, `unknown command "extra" for "raftka topic list"`},
		{[]string{"-b", "127.0.0.1:abc", "topic", "list"}, exitUsage, "-b 127.0.0.1:abc: the port must be a number from 1 to 65535"},
		{[]string{"-b", "", "topic", "list"}, exitUsage, "name at least one broker"},
		{[]string{"-o", "yaml", "topic", "list"}, exitUsage, "want table or json"},
		{[]string{"consume", "x", "--from", "yesterday"}, exitUsage, "RFC 3339"},
		{[]string{"produce", "x", "--acks", "some"}, exitUsage, "want all, leader or none"},
		{[]string{"topic", "describe", "missing"}, exitFailed, "UNKNOWN_TOPIC_OR_PARTITION"},
		{[]string{"topic", "create", "bad/name"}, exitFailed, "INVALID_TOPIC_EXCEPTION"},
		{[]string{"topic", "create", "__consumer_offsets"}, exitFailed, "topic __consumer_offsets already exists: it is the group coordinator's internal topic"},
		{[]string{"topic", "create", "__transaction_state"}, exitFailed, "Creation of internal topic __transaction_state is prohibited"},
		{[]string{"topic", "create", "wide", "-r", "3"}, exitFailed, "replication factor 3 is larger than the 1 brokers the cluster has"},
		{[]string{"topic", "add-partitions", "four", "--partitions", "2"}, exitFailed, "topic four has 4 partitions, and partitions only grow"},
		{[]string{"group", "describe", "nosuchgroup"}, exitFailed, "group nosuchgroup does not exist"},
		{[]string{"topic", "alter-config", "four", "--set", "nosuch.key=1"}, exitFailed, "INVALID_CONFIG: unknown topic config nosuch.key"},
		{[]string{"topic", "alter-config", "four", "--set", "retention.ms=soon"}, exitFailed, `invalid value "soon" for retention.ms: want a whole number of at least -1`},
		{[]string{"topic", "alter-config", "four", "--set", "min.insync.replicas=2"}, exitFailed, "min.insync.replicas 2 is above the replication factor 1"},
		{[]string{"topic", "create", "badconfig", "-c", "cleanup.policy=sometimes"}, exitFailed, `invalid value "sometimes" for cleanup.policy: want one of delete, compact`},
		{[]string{"acl", "list"}, exitFailed, "SECURITY_DISABLED: the brokers run without an authorizer: start them with --authorizer acl"},
		{[]string{"group", "seek", "g"}, exitUsage, "give --to or --shift"},
		{[]string{"group", "seek", "g", "--to", "end", "--partition", "1"}, exitUsage, "--partition needs exactly one --topic"},
	} {
		code, _, errOut := raftka(t, c, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.says) {
			t.Errorf("raftka %s: exit %d, %q; want exit %d saying %q", strings.Join(tc.args, " "), code, errOut, tc.code, tc.says)
		}
	}
	var o, e bytes.Buffer
	if code := run([]string{"-b", "127.0.0.1:1", "topic", "list"}, strings.NewReader(""), &o, &e); code != exitFailed || !strings.Contains(e.String(), "make run") {
		t.Errorf("no cluster: exit %d, %q", code, e.String())
	}
}

// raftkaWithin runs the command, failing the test if it has not ended
// within limit: a hang is what these tests look for.
func raftkaWithin(t *testing.T, c *brokertest.Cluster, limit time.Duration, stdin string, args ...string) (code int, out, errOut string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		code, out, errOut = raftka(t, c, stdin, args...)
	}()
	select {
	case <-done:
		return code, out, errOut
	case <-time.After(limit):
		t.Fatalf("raftka %s did not end within %v", strings.Join(args, " "), limit)
		return 0, "", ""
	}
}

// No command waits silently: consuming a topic that is not there fails at
// once; a produce the brokers keep refusing reports each refusal as it
// comes and gives up at --timeout; a group member says on stderr what
// it joined and was given. Output keeps what records hold: headers of
// one key in order, binary values as base64, tombstones as null.
func TestNoSilentHangs(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"consume", "nosuch"}, {"consume", "nosuch", "--group", "g"}, {"consume", "nosuch", "--exit"}} {
		if code, _, errOut := raftkaWithin(t, c, 20*time.Second, "", args...); code != exitFailed || !strings.Contains(errOut, "UNKNOWN_TOPIC_OR_PARTITION") {
			t.Errorf("raftka %s: exit %d, %q", strings.Join(args, " "), code, errOut)
		}
	}

	c.CreateTopic("strict", 1, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("3")})
	mustRaftka(t, c, "before\n", "produce", "strict")
	follower := (c.LeaderOf("strict", 0) + 1) % 3
	c.Stop(follower)
	for {
		md, err := c.Admin().Metadata(ctx, "strict")
		if err == nil && len(md.Topics["strict"].Partitions[0].ISR) == 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the stopped broker %d stayed in sync: %+v %v", follower, md.Topics["strict"], err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	began := time.Now()
	code, _, errOut := raftkaWithin(t, c, 60*time.Second, "refused\n", "produce", "strict", "--timeout", "4s")
	if code != exitFailed || !strings.Contains(errOut, "strict[0] refused: NOT_ENOUGH_REPLICAS") || !strings.Contains(errOut, "gave up after --timeout 4s") {
		t.Errorf("produce with too few replicas in sync: exit %d after %v, %q", code, time.Since(began), errOut)
	}
	c.Restart(follower)

	c.CreateTopic("records", 1, 3, nil)
	mustRaftka(t, c, "k:v\n", "produce", "records", "-k", ":", "-H", "trace=1", "-H", "trace=2", "-H", "other=x")
	cl := c.Client(kgo.DefaultProduceTopic("records"))
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("bin"), Value: []byte{0xff, 0x00, 0xfe}}, &kgo.Record{Key: []byte("gone")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var got []consumed
	for _, line := range strings.Split(strings.TrimSpace(mustRaftka(t, c, "", "-o", "json", "consume", "records", "--exit")), "\n") {
		var r consumed
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("consume line %q: %v", line, err)
		}
		got = append(got, r)
	}
	if len(got) != 3 {
		t.Fatalf("consumed %+v, want 3 records", got)
	}
	var headers []string
	for _, h := range got[0].Headers {
		headers = append(headers, h.Key+"="+*h.Value)
	}
	if !slices.Equal(headers, []string{"trace=1", "trace=2", "other=x"}) {
		t.Errorf("headers %v, want every one, in order", headers)
	}
	if got[1].ValueEncoding != "base64" || *got[1].Value != base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 0xfe}) {
		t.Errorf("binary value printed as %+v", got[1])
	}
	if got[2].Value != nil {
		t.Errorf("a tombstone printed as %+v, want a null value", got[2])
	}
	if out := mustRaftka(t, c, "", "consume", "records", "--from", "-1", "--exit"); out != "\n" {
		t.Errorf("--from -1 printed %q, want the last record (a tombstone) only", out)
	}

	c.CreateTopic("three", 3, 3, nil)
	mustRaftka(t, c, "a:1\nb:\n", "produce", "three", "-k", ":", "--partition", "2", "--tombstone", "--compression", "zstd")
	if out := mustRaftka(t, c, "", "consume", "three", "--partition", "2", "--exit", "--format", `%k=%v@%p/%o\n`); out != "a=1@2/0\nb=@2/1\n" {
		t.Errorf("consume --partition 2 --format: %q", out)
	}
	if out := mustRaftka(t, c, "", "consume", "three", "--partition", "0,1", "--exit"); out != "" {
		t.Errorf("consume of the empty partitions 0 and 1 printed %q", out)
	}
	var last consumed
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "consume", "three", "--from", "-1", "--partition", "2", "--exit")), &last); err != nil || last.Value != nil || *last.Key != "b" {
		t.Errorf("produce --tombstone wrote %+v (%v), want b with a null value", last, err)
	}

	code, out, errOut := raftkaWithin(t, c, 60*time.Second, "", "consume", "records", "--group", "watchers", "--exit")
	if code != 0 || strings.Count(out, "\n") != 3 || !strings.Contains(errOut, "joining group watchers on records") ||
		!strings.Contains(errOut, "group watchers assigned records partitions 0") {
		t.Errorf("consume --group: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// Help is on stdout and exits 0, for every command, with each flag and
// its default; asking for it sends nothing to a cluster (there is none
// here: -b names a port nothing listens on).
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{[]string{"--help"}, []string{"Usage:\n  raftka [command]", "topic ", "version", "completion", "Exit codes:"}},
		{[]string{"-h"}, []string{"Available Commands:"}},
		{[]string{"help"}, []string{"Available Commands:", "acl ", "user ", "quota "}},
		{[]string{}, []string{"Available Commands:"}},
		{[]string{"topic", "--help"}, []string{"raftka topic [command]", "add-partitions"}},
		{[]string{"group", "--help"}, []string{"seek"}},
		{[]string{"topic"}, []string{"raftka topic [command]"}},
		{[]string{"topic", "describe", "--help"}, []string{"raftka topic describe NAME... [flags]", "--brokers string"}},
		{[]string{"topic", "delete", "--help"}, []string{"raftka topic delete NAME... [flags]"}},
		{[]string{"group", "describe", "--help"}, []string{"raftka group describe GROUP [flags]", "Examples:"}},
		{[]string{"topic", "create", "-h"}, []string{`-p, --partitions int32`, "(default -1)", "Examples:", "broker default"}},
		{[]string{"help", "consume"}, []string{"--from string", `(default "start")`, "until Ctrl-C"}},
		{[]string{"version"}, []string{"raftka dev (commit "}},
		{[]string{"--version"}, []string{"raftka dev (commit "}},
		{[]string{"completion", "bash"}, []string{"bash completion"}},
	} {
		var o, e bytes.Buffer
		code := run(append([]string{"-b", "127.0.0.1:1"}, tc.args...), strings.NewReader(""), &o, &e)
		if code != 0 || e.Len() > 0 {
			t.Errorf("raftka %s: exit %d, stderr %q", strings.Join(tc.args, " "), code, e.String())
			continue
		}
		for _, want := range tc.says {
			if !strings.Contains(o.String(), want) {
				t.Errorf("raftka %s: stdout lacks %q:\n%s", strings.Join(tc.args, " "), want, o.String())
			}
		}
	}
}

// Every command that runs has a summary, a description and an example,
// and every flag a description.
func TestEveryCommandHasHelp(t *testing.T) {
	root, _ := newRoot(&env{})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c.HasSubCommands() || c.Name() == "help" || strings.HasPrefix(c.CommandPath(), "raftka completion") {
			return
		}
		if c.Short == "" || c.Long == "" || c.Example == "" {
			t.Errorf("%s: summary %q, description %q, example %q", c.CommandPath(), c.Short, c.Long, c.Example)
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Usage == "" {
				t.Errorf("%s --%s has no description", c.CommandPath(), f.Name)
			}
		})
	}
	walk(root)
}

// verify against real brokers: its own numbered run reads back every
// acknowledged record once; numbered records with a gap and a repeat,
// written compressed by another producer, are reported with their
// offsets and make it exit 1; records removed by DeleteRecords are not.
func TestVerifyFindsGapsAndDuplicates(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mustRaftka(t, c, "", "topic", "create", "ledger", "--partitions", "3", "-r", "3")

	report := func(args ...string) (int, verifyReport) {
		t.Helper()
		code, out, errOut := raftka(t, c, "", append([]string{"-o", "json", "verify", "ledger"}, args...)...)
		var r verifyReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("verify %v: exit %d, %v: %s %s", args, code, err, out, errOut)
		}
		return code, r
	}
	code, r := report("--produce", "300")
	var records int64
	for _, p := range r.Partitions {
		records += p.Records
		if p.Producers != 2 { // the idempotent producer and the numbered name
			t.Errorf("partition %+v: want 2 producers seen", p)
		}
	}
	if code != 0 || r.Acked != 300 || records != 300 || len(r.Problems) != 0 {
		t.Fatalf("verify --produce 300: exit %d, %d acknowledged, %d read, problems %+v", code, r.Acked, records, r.Problems)
	}
	out := mustRaftka(t, c, "a\nb\nc\nd\n", "produce", "ledger", "--numbered", "--producer", "app")
	if !strings.Contains(out, "numbered as producer app") {
		t.Errorf("produce --numbered said %q", out)
	}
	if code, r := report(); code != 0 || len(r.Problems) != 0 {
		t.Fatalf("after produce --numbered: exit %d, problems %+v", code, r.Problems)
	}

	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.SnappyCompression()), kgo.DefaultProduceTopic("ledger"))
	defer cl.Close()
	before, err := c.Admin().ListEndOffsets(ctx, "ledger")
	if err != nil {
		t.Fatal(err)
	}
	base := before["ledger"][0].Offset
	for _, seq := range []string{"0", "1", "5", "5", "6"} {
		rec := &kgo.Record{Partition: 0, Value: []byte("x"), Headers: []kgo.RecordHeader{{Key: headerProducer, Value: []byte("app2")}, {Key: headerSequence, Value: []byte(seq)}}}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	code, r = report()
	if code != exitFailed || len(r.Problems) != 2 {
		t.Fatalf("with a gap and a repeat: exit %d, problems %+v", code, r.Problems)
	}
	gap, dup := r.Problems[0], r.Problems[1]
	if gap.Kind != problemSequenceGap || gap.Producer != "app2" || gap.Partition != 0 || gap.Offset != base+2 || !strings.Contains(gap.Detail, "sequences 2 to 4 missing") {
		t.Errorf("gap reported as %+v, want sequences 2 to 4 missing at offset %d", gap, base+2)
	}
	if dup.Kind != problemDuplicate || dup.Offset != base+3 || !strings.Contains(dup.Detail, fmt.Sprintf("first written at offset %d", base+2)) {
		t.Errorf("repeat reported as %+v, want at offset %d, first at %d", dup, base+3, base+2)
	}
	code, _, errOut := raftka(t, c, "", "verify", "ledger")
	if code != exitFailed || !strings.Contains(errOut, "found 2 problems") {
		t.Errorf("verify as a table: exit %d, %q", code, errOut)
	}
	// A window after the problems is clean.
	if code, r := report("--from", strconv.FormatInt(base+4, 10)); code != 0 || len(r.Problems) != 0 {
		t.Errorf("verify from offset %d: exit %d, problems %+v", base+4, code, r.Problems)
	}

	// Records DeleteRecords removed are no loss.
	deleted, err := c.Admin().DeleteRecords(ctx, kadm.Offsets{"ledger": {1: {At: 40}}})
	if err != nil || deleted.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, deleted.Error())
	}
	code, r = report("--to", "end")
	if len(r.Problems) != 2 || r.Partitions[1].From != 40 {
		t.Errorf("after DeleteRecords: exit %d, partition 1 read from %d, problems %+v", code, r.Partitions[1].From, r.Problems)
	}

	// Partition 2, read from offset 0: a reorder is one problem, and
	// numbers that start late are a loss.
	numbered := func(producer string, seqs ...string) {
		for _, seq := range seqs {
			rec := &kgo.Record{Partition: 2, Value: []byte("x"), Headers: []kgo.RecordHeader{{Key: headerProducer, Value: []byte(producer)}, {Key: headerSequence, Value: []byte(seq)}}}
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	numbered("app3", "0", "1", "3", "2", "4")
	numbered("app4", "3", "4", "5", "7")
	_, r = report()
	var got []string
	for _, p := range r.Problems {
		if p.Partition == 2 {
			got = append(got, p.Producer+" "+p.Kind+": "+p.Detail)
		}
	}
	if len(got) != 3 || !strings.HasPrefix(got[0], "app3 reorder: sequence 2 at offset") ||
		!strings.HasPrefix(got[1], "app4 sequence-gap: sequences 0 to 2 missing before offset") || !strings.HasPrefix(got[2], "app4 sequence-gap: sequences 6 to 6 missing") {
		t.Errorf("partition 2's problems: %q, want app3's reorder, then app4's late start and its gap", got)
	}
}

// cluster health against real brokers: healthy with every broker up; with
// one stopped it exits 1, names the broker and the under-replicated
// partitions, and the others' /safe-to-restart says no.
func TestClusterHealth(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	mustRaftka(t, c, "", "topic", "create", "replicated", "--partitions", "2", "-r", "3")
	health := func() (int, clusterHealth) {
		t.Helper()
		code, out, errOut := raftka(t, c, "", "-o", "json", "cluster", "health")
		var h clusterHealth
		if err := json.Unmarshal([]byte(out), &h); err != nil {
			t.Fatalf("cluster health: exit %d, %v: %s %s", code, err, out, errOut)
		}
		return code, h
	}
	deadline := time.Now().Add(30 * time.Second)
	code, h := health()
	for code != 0 && time.Now().Before(deadline) { // leaders settle after creation
		time.Sleep(500 * time.Millisecond)
		code, h = health()
	}
	if code != 0 || !h.Healthy || h.Partitions != 2 || len(h.Brokers) != 3 {
		t.Fatalf("cluster health with every broker up: exit %d, %+v", code, h)
	}
	leaders := 0
	for _, b := range h.Brokers {
		if b.Ready == nil || !*b.Ready || b.SafeToRestart == nil || !*b.SafeToRestart || b.HTTP != c.Brokers[b.ID].HTTPAddr {
			t.Errorf("broker %+v: want ready and safe to restart, HTTP at %s", b, c.Brokers[b.ID].HTTPAddr)
		}
		if b.Metadata == "leader" {
			leaders++
		}
	}
	if leaders != 1 || h.MetadataLeader < 0 {
		t.Errorf("metadata leader %d, %d brokers say they lead", h.MetadataLeader, leaders)
	}

	c.Stop(2)
	c.WaitExit(2, 30*time.Second)
	deadline = time.Now().Add(30 * time.Second)
	for {
		code, h = health()
		fenced := slices.ContainsFunc(h.Brokers, func(b brokerHealth) bool { return b.ID == 2 && b.Fenced })
		if code == exitFailed && fenced && len(h.UnderReplicated) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster health with broker 2 stopped: exit %d, %+v", code, h)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, b := range h.Brokers {
		if b.ID != 2 && (b.SafeToRestart == nil || *b.SafeToRestart) {
			t.Errorf("broker %d may restart with broker 2 down, its check says: %+v", b.ID, b)
		}
		if b.ID == 2 && b.Address != c.Brokers[2].KafkaAddr {
			t.Errorf("broker 2, down, shown at %q, want its address %s", b.Address, c.Brokers[2].KafkaAddr)
		}
	}
	if !slices.ContainsFunc(h.Problems, func(p string) bool { return strings.Contains(p, "broker 2 does not answer") }) {
		t.Errorf("problems %q do not name broker 2", h.Problems)
	}
}

// group describe counts records, not offsets: a group that read every
// record of a transactional topic, and committed past its last record but
// not past the commit marker, has a lag of 0.
func TestGroupDescribeLeavesOutTransactionMarkers(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 1})
	c.CreateTopic("tx-lag", 1, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := c.Client(kgo.TransactionalID("tx-lag"), kgo.DefaultProduceTopic("tx-lag"), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer p.Close()
	if err := brokertest.InTransaction(ctx, p, true, "a", "b", "c", "d"); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "tx-lag", Partition: 0, At: 4, LeaderEpoch: -1}) // past record 3, before the marker at 4
	if _, err := c.Admin().CommitOffsets(ctx, "tx-g", offsets); err != nil {
		t.Fatal(err)
	}
	var v groupView
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "group", "describe", "tx-g")), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Partitions) != 1 || v.Partitions[0].End != 5 || v.Partitions[0].Lag != 0 || v.TotalLag != 0 {
		t.Fatalf("group describe of a fully read transactional partition: %+v, want end 5 and lag 0", v)
	}
}

// txn list, describe and abort against a real broker: the abort of the
// transaction open on a partition fences its producer, and
// read_committed readers move past it.
func TestTxnCommands(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 1})
	c.CreateTopic("tx-abort", 1, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := c.Client(kgo.TransactionalID("tx-stuck"), kgo.DefaultProduceTopic("tx-abort"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.TransactionTimeout(10*time.Minute))
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("stuck")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var listed []struct{ TransactionalID, State string }
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "txn", "list", "--state", "Ongoing")), &listed); err != nil ||
		len(listed) != 1 || listed[0].TransactionalID != "tx-stuck" {
		t.Fatalf("txn list: %+v %v", listed, err)
	}
	var described []txnView
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "txn", "describe", "tx-stuck")), &described); err != nil ||
		len(described) != 1 || described[0].State != "Ongoing" || !slices.Equal(described[0].Partitions, []string{"tx-abort/0"}) {
		t.Fatalf("txn describe: %+v %v", described, err)
	}
	if code, _, _ := raftka(t, c, "", "txn", "abort"); code != exitUsage {
		t.Errorf("txn abort with nothing named: exit %d, want %d", code, exitUsage)
	}
	if out := mustRaftka(t, c, "", "txn", "abort", "--topic", "tx-abort", "--partition", "0"); !strings.Contains(out, "tx-stuck") {
		t.Errorf("txn abort printed %q", out)
	}
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "txn", "describe", "tx-stuck")), &described); err != nil ||
		described[0].State != "CompleteAbort" && described[0].State != "Empty" || described[0].ProducerEpoch == 0 {
		t.Fatalf("after the abort: %+v %v, want it ended with the epoch bumped", described, err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the fenced producer committed the aborted transaction")
	}
	if code, _, errOut := raftka(t, c, "", "txn", "abort", "tx-stuck"); code != exitFailed || !strings.Contains(errOut, "no open transaction") {
		t.Errorf("abort of an id with nothing open: exit %d, %q", code, errOut)
	}
	plain := c.Client(kgo.DefaultProduceTopic("tx-abort"))
	defer plain.Close()
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := c.Client(kgo.ConsumeTopics("tx-abort"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	defer r.Close()
	var got []string
	for len(got) == 0 && ctx.Err() == nil {
		r.PollFetches(ctx).EachRecord(func(rec *kgo.Record) { got = append(got, string(rec.Value)) })
	}
	if !slices.Equal(got, []string{"after"}) {
		t.Fatalf("read_committed after the abort read %q, want only the record after it", got)
	}
}

// The cluster's admin commands against 3 real brokers, each checked in
// the cluster itself.
func TestClusterAdminCommands(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := c.Admin()
	c.CreateTopic("admin", 2, 1, nil)
	mustRaftka(t, c, "a\nb\nc\n", "produce", "admin")
	mustRaftka(t, c, "", "cluster", "delete-records", "--topic", "admin", "--before", "end")
	starts, err := adm.ListStartOffsets(ctx, "admin")
	ends, err2 := adm.ListEndOffsets(ctx, "admin")
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	starts.Each(func(o kadm.ListedOffset) {
		if end, _ := ends.Lookup("admin", o.Partition); o.Offset != end.Offset {
			t.Errorf("partition %d starts at %d after delete-records --before end, its end is %d", o.Partition, o.Offset, end.Offset)
		}
	})

	var elected []struct {
		Topic     string
		Partition int32
		Error     string
	}
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "cluster", "elect-leaders", "--topic", "admin")), &elected); err != nil || len(elected) != 2 || elected[0].Error != "" {
		t.Errorf("elect-leaders: %+v %v", elected, err)
	}
	var dirs []struct {
		Broker    int32
		Topic     string
		Partition int32
	}
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "cluster", "log-dirs", "--topic", "admin")), &dirs); err != nil || len(dirs) != 2 {
		t.Errorf("log-dirs of a topic of 2 partitions of 1 replica: %+v %v", dirs, err)
	}
	var quorum struct {
		Leader int32
		Voters []int32
	}
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "cluster", "quorum", "describe")), &quorum); err != nil || quorum.Leader < 0 || len(quorum.Voters) != 3 {
		t.Errorf("quorum describe: %+v %v", quorum, err)
	}

	mustRaftka(t, c, "", "cluster", "broker-config", "alter", "--set", "follower.replication.throttled.rate=1048576")
	if out := mustRaftka(t, c, "", "cluster", "broker-config", "describe"); !regexp.MustCompile(`follower.replication.throttled.rate\s+1048576`).MatchString(out) {
		t.Errorf("broker-config describe after alter: %s", out)
	}
	if code, _, errOut := raftka(t, c, "", "cluster", "broker-config", "alter", "--set", "bogus=1"); code != exitFailed || !strings.Contains(errOut, "unknown broker config bogus") {
		t.Errorf("alter of an unknown broker config: exit %d, %q", code, errOut)
	}
	if code, _, errOut := raftka(t, c, "", "cluster", "unregister", "1"); code != exitFailed || errOut == "" {
		t.Errorf("unregister of a running broker: exit %d, %q", code, errOut)
	}
	if code, _, _ := raftka(t, c, "", "cluster", "elect-leaders", "--type", "unclean"); code != exitUsage {
		t.Errorf("an unclean election of every partition: exit %d, want %d", code, exitUsage)
	}
	// A partition that has a leader is not recovered, and the report says so.
	if code, out, _ := raftka(t, c, "", "cluster", "elect-leaders", "--type", "unclean", "--topic", "admin", "--partition", "0"); code != 0 ||
		!regexp.MustCompile(`admin\s+0\s+not needed: \S`).MatchString(out) || strings.Contains(out, "preferred") {
		t.Errorf("an unclean election of a healthy partition: exit %d, %q", code, out)
	}

	// A plan onto broker 2 alone, executed and followed to the end.
	planned := mustRaftka(t, c, "", "cluster", "reassign", "plan", "--topic", "admin", "--broker-ids", "2")
	var plan reassignment
	if err := json.Unmarshal([]byte(planned), &plan); err != nil || len(plan.Partitions) != 2 || !slices.Equal(plan.Partitions[1].Replicas, []int32{2}) {
		t.Fatalf("plan: %s %v", planned, err)
	}
	mustRaftka(t, c, planned, "cluster", "reassign", "execute", "-", "--wait", "--timeout", "2m")
	details, err := adm.ListTopics(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range details["admin"].Partitions {
		if !slices.Equal(p.Replicas, []int32{2}) {
			t.Errorf("partition %d on %v after the reassignment, want [2]", p.Partition, p.Replicas)
		}
	}
	if out := mustRaftka(t, c, "", "cluster", "reassign", "status"); !strings.Contains(out, "no partition is moving") {
		t.Errorf("status after the moves: %s", out)
	}

	// A voter out of the metadata group and back in.
	voters := func() []int32 {
		var q struct{ Voters []int32 }
		if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "cluster", "quorum", "describe")), &q); err != nil {
			t.Fatal(err)
		}
		return q.Voters
	}
	if code, _, errOut := raftka(t, c, "", "cluster", "quorum", "remove-voter", "2"); code != exitFailed || !strings.Contains(errOut, "broker 2 hosts partition replicas") {
		t.Errorf("remove-voter of the broker holding the replicas: exit %d, %q", code, errOut)
	}
	mustRaftka(t, c, "", "cluster", "quorum", "remove-voter", "1")
	if v := voters(); !slices.Equal(v, []int32{0, 2}) {
		t.Errorf("voters after remove-voter 1: %v", v)
	}
	if code, _, errOut := raftka(t, c, "", "cluster", "quorum", "add-voter", "7"); code != exitFailed || errOut == "" {
		t.Errorf("add-voter of a broker that is not there: exit %d, %q", code, errOut)
	}
	// Broker 1 left the metadata group and holds no replica: once
	// stopped, the cluster forgets it.
	c.Stop(1)
	c.WaitExit(1, 30*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _, errOut := raftka(t, c, "", "cluster", "unregister", "1")
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("unregister of the stopped broker 1: exit %d, %q", code, errOut)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var info struct{ Brokers []struct{ ID int32 } }
	if err := json.Unmarshal([]byte(mustRaftka(t, c, "", "-o", "json", "cluster", "info")), &info); err != nil || len(info.Brokers) != 2 {
		t.Errorf("brokers after unregister 1: %+v %v", info, err)
	}
}

// A profile saves the brokers a command was given; later commands take
// them from it, a flag still wins, and the file is readable by its owner
// only.
func TestProfiles(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 1})
	path := t.TempDir() + "/profiles.yaml"
	t.Setenv("RAFTKA_CONFIG", path)
	t.Setenv("RAFTKA_BROKERS", "")
	c.CreateTopic("profiled", 1, 1, nil)
	plain := func(args ...string) (int, string, string) {
		var o, e bytes.Buffer
		code := run(args, strings.NewReader(""), &o, &e)
		return code, o.String(), e.String()
	}
	mustRaftka(t, c, "", "profile", "create", "local")
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("profiles file: %v %v, want mode 0600", info, err)
	}
	if code, out, errOut := plain("topic", "list"); code != 0 || !strings.Contains(out, "profiled") {
		t.Errorf("topic list with the current profile: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := plain("-b", "127.0.0.1:1", "topic", "list"); code != exitFailed || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("a flag over the profile: exit %d, %q", code, errOut)
	}
	if code, out, _ := plain("profile", "list"); code != 0 || !regexp.MustCompile(`\*\s+local\s+`+regexp.QuoteMeta(c.Bootstrap()[0])).MatchString(out) {
		t.Errorf("profile list: exit %d, %q", code, out)
	}
	if code, _, errOut := plain("--profile", "nosuch", "topic", "list"); code != exitUsage || !strings.Contains(errOut, `no profile "nosuch"`) {
		t.Errorf("an unknown profile: exit %d, %q", code, errOut)
	}
	if code, _, _ := plain("profile", "delete", "local"); code != 0 {
		t.Fatalf("profile delete: exit %d", code)
	}
	if code, out, _ := plain("-o", "json", "profile", "list"); code != 0 || strings.Contains(out, "local") {
		t.Errorf("profile list after the delete: exit %d, %q", code, out)
	}
}
