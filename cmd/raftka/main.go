package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Exit codes: 0 done, 1 the cluster refused or failed, 2 a usage error.
const (
	exitFailed = 1
	exitUsage  = 2
)

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// env is what every command gets: the brokers, the output form and the
// streams.
type env struct {
	brokers []string
	// connect are the client options of the brokers' listener (security).
	connect []kgo.Opt
	json    bool
	in      io.Reader
	out     io.Writer
}

// command is one subcommand: its words ("topic create"), a one-line
// summary, and what it runs with the arguments after its words.
type command struct {
	words   string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

var commands = []command{
	{"topic create", "create a topic: NAME [--partitions N] [--replication-factor N] [--config key=value]...", topicCreate},
	{"topic list", "list the topics", topicList},
	{"topic describe", "each partition's leader, replicas and in-sync replicas, and the topic's configs: NAME...", topicDescribe},
	{"topic alter-config", "set or delete topic configs: NAME [--set key=value]... [--delete key]...", topicAlterConfig},
	{"topic add-partitions", "grow a topic to N partitions in all: NAME --partitions N", topicAddPartitions},
	{"topic delete", "delete topics: NAME...", topicDelete},
	{"produce", "produce stdin's lines to a topic: TOPIC [--key-separator S] [--header key=value]... [--acks all|leader|none] [--numbered [--producer NAME]]", produce},
	{"verify", "check a topic for lost and duplicated records (producer sequences, numbered records, offsets): TOPIC [--from start|OFFSET|TIME] [--to end|OFFSET|TIME] [--produce N]", verify},
	{"consume", "print a topic's records: TOPIC [--from start|end|OFFSET|TIME] [--count N] [--exit] [--group ID] [--format text|json]", consume},
	{"group list", "list the consumer groups", groupList},
	{"group describe", "a group's state, members, and committed offset and lag per partition: GROUP", groupDescribe},
	{"group seek", "move a group's committed offsets while it has no members: GROUP --to start|end|OFFSET|TIME [--topic T]... [--dry-run]", groupSeek},
	{"txn list", "the transactional ids and their transactions' states: [--state S]...", txnList},
	{"txn describe", "transactional ids' producer, epoch, state, timeout and open partitions: ID...", txnDescribe},
	{"txn abort", "fence the producer of each id and abort its open transaction, or of the transactions open on a partition: ID... | --topic T --partition P [--timeout 30s]", txnAbort},
	{"user list", "the SCRAM users of SASL listeners and their mechanisms", userList},
	{"user set-password", "create a SCRAM user or change its password, read from stdin: NAME [--mechanism SCRAM-SHA-512|SCRAM-SHA-256] [--iterations N]", userSetPassword},
	{"user delete", "delete a user's SCRAM credentials (all, or one mechanism's): NAME [--mechanism M]", userDelete},
	{"acl list", "the ACLs (brokers run with --authorizer acl), all or those the flags select: [--allow P|--deny P] [--topic T|--group G|--cluster|--transactional-id ID] [--prefixed] [--operation OP]", aclList},
	{"acl add", "add ACLs: --allow P|--deny P (User:NAME, User:*)... --operation OP[,OP]... --topic T|--group G|--cluster|--transactional-id ID... [--prefixed] [--host H]", aclAdd},
	{"acl remove", "remove the ACLs the flags name, as acl add takes them", aclRemove},
	{"quota list", "client quotas, all or those of an entity: [--user U|--default-user] [--client-id C|--default-client-id]", quotaList},
	{"quota alter", "set or delete an entity's quotas (producer_byte_rate, consumer_byte_rate, in bytes/s per broker): --user U|--default-user and/or --client-id C|--default-client-id [--set key=value]... [--delete key]...", quotaAlter},
	{"cluster info", "the brokers, the controller and the cluster id", clusterInfo},
	{"cluster health", "whether every broker is up and ready, the metadata group led, and every partition led and fully in sync; what each broker's /safe-to-restart says (exit 1 when not healthy)", clusterHealthCommand},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, in io.Reader, out, errOut io.Writer) int {
	brokers, output := os.Getenv("RAFTKA_BROKERS"), "table"
	sec := securityFromEnv()
	global := map[string]*string{"b": &brokers, "brokers": &brokers, "o": &output, "output": &output}
	for name, target := range securityFlags(sec) {
		global[name] = target
	}
	args, err := takeGlobalFlags(args, global)
	if err != nil {
		_, _ = fmt.Fprintln(errOut, "raftka:", err)
		printUsage(errOut)
		return exitUsage
	}
	cmd, rest := findCommand(args)
	if cmd == nil {
		if len(args) > 0 && args[0] != "help" {
			_, _ = fmt.Fprintf(errOut, "raftka: unknown command %q\n", strings.Join(args, " "))
		}
		printUsage(errOut)
		if len(args) > 0 && args[0] == "help" {
			return 0
		}
		return exitUsage
	}
	if output != "table" && output != "json" {
		_, _ = fmt.Fprintf(errOut, "raftka: -o %s: want table or json\n", output)
		return exitUsage
	}
	connect, err := sec.ClientOpts()
	if err != nil {
		_, _ = fmt.Fprintln(errOut, "raftka:", err)
		return exitUsage
	}
	e := &env{brokers: splitBrokers(brokers), connect: connect, json: output == "json", in: in, out: out}
	if len(e.brokers) == 0 {
		e.brokers = []string{"127.0.0.1:9092"}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, e, rest); err != nil {
		_, _ = fmt.Fprintf(errOut, "raftka %s: %v\n", cmd.words, err)
		var u usageError
		if errors.As(err, &u) {
			_, _ = fmt.Fprintf(errOut, "usage: raftka %s %s\n", cmd.words, argsOf(cmd.summary))
			return exitUsage
		}
		return exitFailed
	}
	return 0
}

// takeGlobalFlags removes the flags every command takes from wherever
// they stand (raftka -b X topic list, raftka topic list -b X), setting
// them, and returns the other arguments.
func takeGlobalFlags(args []string, flags map[string]*string) ([]string, error) {
	var rest []string
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		target, ok := flags[name]
		if !ok || !strings.HasPrefix(args[i], "-") {
			rest = append(rest, args[i])
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("flag %s needs a value", args[i])
			}
			i++
			value = args[i]
		}
		*target = value
	}
	return rest, nil
}

// findCommand matches the longest command words at the start of args.
func findCommand(args []string) (*command, []string) {
	var best *command
	n := 0
	for i := range commands {
		words := strings.Fields(commands[i].words)
		if len(words) > n && len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			best, n = &commands[i], len(words)
		}
	}
	if best == nil {
		return nil, nil
	}
	return best, args[n:]
}

func argsOf(summary string) string {
	if _, after, ok := strings.Cut(summary, ": "); ok {
		return after
	}
	return ""
}

func printUsage(w io.Writer) {
	_, _ = fmt.Fprintln(w, `usage: raftka [-b host:port,...] [-o table|json] COMMAND [ARGS]

The brokers come from -b/--brokers, else $RAFTKA_BROKERS, else 127.0.0.1:9092.

A listener that is not PLAINTEXT: --security-protocol SSL|SASL_PLAINTEXT|SASL_SSL,
--sasl-mechanism SCRAM-SHA-512|SCRAM-SHA-256|PLAIN, --username NAME, the password
in $RAFTKA_PASSWORD (or --password), --ca-file PEM, and for mTLS --cert-file and
--key-file; each also as $RAFTKA_<NAME> (RAFTKA_SECURITY_PROTOCOL, ...).

Commands:`)
	sorted := append([]command(nil), commands...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].words < sorted[j].words })
	for _, c := range sorted {
		summary, _, _ := strings.Cut(c.summary, ": ")
		_, _ = fmt.Fprintf(w, "  %s %s\n      %s\n", c.words, argsOf(c.summary), summary)
	}
}

func splitBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// client connects to the brokers; a cluster that does not answer is an
// error that says where it looked.
func (e *env) client(ctx context.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	base := append([]kgo.Opt{kgo.SeedBrokers(e.brokers...), kgo.ClientID("raftka-cli")}, e.connect...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("no broker answers at %s (%v): is the cluster up (make run), and are -b or RAFTKA_BROKERS right?", strings.Join(e.brokers, ","), err)
	}
	return cl, nil
}

func (e *env) admin(ctx context.Context) (*kadm.Client, func(), error) {
	cl, err := e.client(ctx)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}
