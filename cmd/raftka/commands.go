package main

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/clientsecurity"
)

// runFunc runs a command with its positional arguments.
type runFunc func(ctx context.Context, e *env, args []string) error

// spec is one command: the words that run it, its arguments as the usage
// line shows them, its help, and its flags, which build declares on fs
// before returning what runs.
type spec struct {
	path    string // "topic create"
	args    string // "NAME"
	nargs   cobra.PositionalArgs
	short   string
	long    string
	example string
	build   func(fs *pflag.FlagSet) runFunc
}

// noFlags is build for a command that takes none.
func noFlags(run runFunc) func(*pflag.FlagSet) runFunc {
	return func(*pflag.FlagSet) runFunc { return run }
}

// groups are the commands that only hold others.
var groups = []struct{ name, short string }{
	{"topic", "Create, list, describe, alter and delete topics"},
	{"group", "List, describe, move and delete consumer groups"},
	{"txn", "List, describe and abort transactions"},
	{"user", "SCRAM users of SASL listeners"},
	{"acl", "ACLs of brokers run with --authorizer acl"},
	{"quota", "Client quotas of users and client ids"},
	{"cluster", "The brokers, the cluster's health, and its admin operations"},
	{"cluster quorum", "The metadata group's members"},
	{"profile", "Named clusters with their brokers and credentials, as rpk's profiles"},
	{"cluster reassign", "Move partitions' replicas between brokers, as kafka-reassign-partitions.sh does"},
	{"cluster broker-config", "Broker configs"},
}

var specs = []spec{
	{path: "topic create", args: "NAME", nargs: oneArg("name one topic"), short: "Create a topic",
		long:    "Create a topic. Without --partitions or --replication-factor (or with -1, Kafka's \"broker default\"), the brokers' num.partitions and default.replication.factor apply.",
		example: "  raftka topic create orders --partitions 6 --replication-factor 3 --config retention.ms=86400000",
		build:   topicCreate},
	{path: "topic list", nargs: cobra.NoArgs, short: "List the topics, with their partitions and replication factor",
		example: "  raftka topic list -o json", build: noFlags(topicList)},
	{path: "topic describe", args: "NAME...", nargs: cobra.MinimumNArgs(1), short: "Show each partition's leader, replicas and in-sync replicas, and the topic's configs",
		example: "  raftka topic describe orders\n  raftka topic describe orders --all", build: topicDescribe},
	{path: "topic alter-config", args: "NAME", nargs: oneArg("name one topic"), short: "Set or delete a topic's configs",
		long:    "Set or delete a topic's configs, incrementally: the configs not named keep their values. The brokers refuse an unknown key or a malformed value, and say which.",
		example: "  raftka topic alter-config orders --set retention.ms=3600000 --delete cleanup.policy",
		build:   topicAlterConfig},
	{path: "topic add-partitions", args: "NAME", nargs: oneArg("name one topic"), short: "Grow a topic to a number of partitions in all",
		long:    "Grow a topic to --partitions in all. Partitions only grow. With ordered growth on (the default), each key's records stay in order for every consumer group (docs/autoscaling.md).",
		example: "  raftka topic add-partitions orders --partitions 12", build: topicAddPartitions},
	{path: "topic delete", args: "NAME...", nargs: cobra.MinimumNArgs(1), short: "Delete topics",
		example: "  raftka topic delete orders", build: noFlags(topicDelete)},
	{path: "produce", args: "TOPIC", nargs: oneArg("name one topic"), short: "Produce stdin's lines to a topic, one record each",
		long:    "Produce stdin's lines to a topic, one record each, idempotently. With --numbered, the records carry numbers that raftka verify checks for loss and duplicates.",
		example: "  printf 'alice:1\\nbob:2\\n' | raftka produce orders --key-separator :",
		build:   produce},
	{path: "consume", args: "TOPIC", nargs: oneArg("name one topic"), short: "Print a topic's records",
		long: "Print a topic's records. Without --exit or --count it follows the topic until Ctrl-C; with --group it consumes as a member of that consumer group, " +
			"commits what it printed, and says on stderr when it joined and which partitions it was given.",
		example: "  raftka consume orders --from -10 --exit\n  raftka consume orders --group billing",
		build:   consume},
	{path: "verify", args: "TOPIC", nargs: oneArg("name one topic"), short: "Check a topic for lost and duplicated records",
		long:    "Check a topic for lost and duplicated records: each idempotent producer's sequence numbers, the numbers of records written by produce --numbered, and the offsets. Exits 1 when it finds a loss or a duplicate.",
		example: "  raftka verify orders --produce 1000", build: verify},
	{path: "group list", nargs: cobra.NoArgs, short: "List the consumer groups", example: "  raftka group list -o json", build: noFlags(groupList)},
	{path: "group describe", args: "GROUP", nargs: oneArg("name one group"), short: "Show a group's state, members, and committed offset and lag per partition",
		long:    "Show a group's state, members, and committed offset and lag per partition. The lag counts records: transaction markers and aborted records are left out.",
		example: "  raftka group describe billing", build: noFlags(groupDescribe)},
	{path: "group seek", args: "GROUP", nargs: oneArg("name one group"), short: "Move a group's committed offsets while it has no members",
		long: "Move a group's committed offsets while it has no members: to a position (--to) or by a number of records (--shift), on every topic it committed on, " +
			"or on the --topic and --partition named. An offset outside a partition's records is refused unless --clamp; a shift stays within them.",
		example: "  raftka group seek billing --to start --topic orders --dry-run\n  raftka group seek billing --shift -100 --topic orders --partition 0,1\n  raftka group seek billing --to 2026-12-01T00:00:00Z",
		build:   groupSeek},
	{path: "group delete", args: "GROUP...", nargs: cobra.MinimumNArgs(1), short: "Delete groups that have no members, with their committed offsets",
		example: "  raftka group delete billing", build: noFlags(groupDelete)},
	{path: "group offset-delete", args: "GROUP", nargs: oneArg("name one group"), short: "Delete a group's committed offsets on a topic",
		long:    "Delete a group's committed offsets on a topic, all its partitions or those named; the group then starts them where its auto.offset.reset says. Refused while a member consumes the topic.",
		example: "  raftka group offset-delete billing --topic orders --partition 3", build: groupOffsetDelete},
	{path: "txn list", nargs: cobra.NoArgs, short: "List the transactional ids and their transactions' states", example: "  raftka txn list --state Ongoing", build: txnList},
	{path: "txn describe", args: "ID...", nargs: cobra.MinimumNArgs(1), short: "Show transactional ids' producer, epoch, state, timeout and open partitions",
		example: "  raftka txn describe payments-1", build: noFlags(txnDescribe)},
	{path: "txn abort", args: "[ID...]", short: "Fence the producer of each id and abort its open transaction",
		long:    "Fence the producer of each id and abort its open transaction, or those of the transactions open on a partition (--topic and --partition), as kafka-transactions.sh abort does for a hanging transaction.",
		example: "  raftka txn abort payments-1\n  raftka txn abort --topic orders --partition 3", build: txnAbort},
	{path: "user list", nargs: cobra.NoArgs, short: "List the SCRAM users and their mechanisms", example: "  raftka user list", build: noFlags(userList)},
	{path: "user set-password", args: "NAME", nargs: oneArg("name one user"), short: "Create a SCRAM user or change its password, read from stdin",
		example: "  printf '%s' \"$PASSWORD\" | raftka user set-password alice", build: userSetPassword},
	{path: "user delete", args: "NAME", nargs: oneArg("name one user"), short: "Delete a user's SCRAM credentials", example: "  raftka user delete alice --mechanism SCRAM-SHA-256", build: userDelete},
	{path: "acl list", nargs: cobra.NoArgs, short: "List the ACLs, all or those the flags select", example: "  raftka acl list --allow User:alice", build: aclList},
	{path: "acl add", nargs: cobra.NoArgs, short: "Add ACLs",
		example: "  raftka acl add --allow User:alice --operation read,describe --topic orders", build: aclAdd},
	{path: "acl remove", nargs: cobra.NoArgs, short: "Remove the ACLs the flags name, as acl add takes them", example: "  raftka acl remove --allow User:alice --operation write --topic orders", build: aclRemove},
	{path: "quota list", nargs: cobra.NoArgs, short: "List client quotas, all or those of an entity", example: "  raftka quota list --user alice", build: quotaList},
	{path: "quota alter", nargs: cobra.NoArgs, short: "Set or delete an entity's quotas",
		example: "  raftka quota alter --user alice --set producer_byte_rate=1048576", build: quotaAlter},
	{path: "cluster delete-records", nargs: cobra.NoArgs, short: "Remove a topic's records below an offset, for good",
		long:    "Remove a topic's records below an offset (DeleteRecords, as kafka-delete-records.sh and rpk topic trim-prefix do): the partitions' log start moves there, and consumers below it start at it.",
		example: "  raftka cluster delete-records --topic orders --partition 0 --before 1000\n  raftka cluster delete-records --topic orders --before 168h", build: clusterDeleteRecords},
	{path: "cluster elect-leaders", nargs: cobra.NoArgs, short: "Move leadership to each partition's preferred replica, or recover a partition unclean",
		long: "Move each partition's leadership to its first replica (--type preferred, the default), as kafka-leader-election.sh does. " +
			"--type unclean recovers a partition that lost a quorum of its replicas' data, which Raft never elects a leader in: it restarts it from the most up-to-date survivor and reports what was kept and what is gone.",
		example: "  raftka cluster elect-leaders\n  raftka cluster elect-leaders --type unclean --topic orders --partition 3", build: clusterElectLeaders},
	{path: "cluster log-dirs", nargs: cobra.NoArgs, short: "Show where each broker keeps each partition, and its size", example: "  raftka cluster log-dirs --topic orders", build: clusterLogDirs},
	{path: "cluster unregister", args: "BROKER", nargs: oneArg("name one broker id"), short: "Forget a broker that left the cluster for good",
		long: "Forget a broker that left the cluster for good (UnregisterBroker). It must be stopped and hold no partition replica: move them first (cluster reassign).", example: "  raftka cluster unregister 4", build: noFlags(onBroker(brokerclient.Unregister, "unregistered broker %d"))},
	{path: "cluster quorum describe", nargs: cobra.NoArgs, short: "Show the metadata group's leader, voters and observers", example: "  raftka cluster quorum describe", build: noFlags(clusterQuorum)},
	{path: "cluster quorum add-voter", args: "BROKER", nargs: oneArg("name one broker id"), short: "Make a running broker a voter of the metadata group",
		example: "  raftka cluster quorum add-voter 3", build: noFlags(onBroker(brokerclient.AddVoter, "added broker %d to the metadata voters"))},
	{path: "cluster quorum remove-voter", args: "BROKER", nargs: oneArg("name one broker id"), short: "Take a broker out of the metadata group's voters",
		example: "  raftka cluster quorum remove-voter 3", build: noFlags(onBroker(brokerclient.RemoveVoter, "removed broker %d from the metadata voters"))},
	{path: "cluster broker-config describe", args: "[BROKER...]", short: "Show broker configs: of the brokers named, or those set for every broker",
		example: "  raftka cluster broker-config describe 0", build: noFlags(clusterBrokerConfigs)},
	{path: "cluster broker-config alter", args: "[BROKER...]", short: "Set or delete broker configs (the replication throttles): of the brokers named, or of every broker",
		example: "  raftka cluster broker-config alter --set follower.replication.throttled.rate=10485760", build: clusterAlterBrokerConfigs},
	{path: "cluster reassign plan", nargs: cobra.NoArgs, short: "Propose a placement of topics' partitions over brokers, in Kafka's reassignment JSON",
		long:    "Propose a placement of topics' partitions over the brokers named, each partition keeping its replication factor, in Kafka's reassignment JSON (kafka-reassign-partitions.sh --generate). Nothing moves until execute.",
		example: "  raftka cluster reassign plan --topic orders --broker-ids 1,2,3 > plan.json", build: clusterReassignPlan},
	{path: "cluster reassign execute", args: "FILE", nargs: oneArg("name the plan's file, or - for stdin"), short: "Start the moves a reassignment plan names",
		long:    "Start the moves a reassignment plan (Kafka's JSON) names; with --wait, follow them until every one completed. Each move adds the new replicas, lets them catch up, then removes the old.",
		example: "  raftka cluster reassign execute plan.json --wait", build: clusterReassignExecute},
	{path: "cluster reassign status", nargs: cobra.NoArgs, short: "List the moves in progress, with the replicas being added and removed", example: "  raftka cluster reassign status", build: noFlags(clusterReassignStatus)},
	{path: "cluster reassign cancel", args: "FILE", nargs: oneArg("name the plan's file, or - for stdin"), short: "Stop the moves a plan names; the replicas stay where they were",
		example: "  raftka cluster reassign cancel plan.json", build: noFlags(clusterReassignCancel)},
	{path: "profile create", args: "NAME", nargs: oneArg("name the profile"), short: "Save the brokers and security settings given (flags, environment) as a profile",
		long: "Save the brokers and security settings this command is given, by its global flags or the RAFTKA_* environment, as a named profile in $RAFTKA_CONFIG " +
			"(else ~/.config/raftka/profiles.yaml), and make it the current one. The password is kept only with --store-password, in a file only you may read; else name the variable to read it from with --password-env.",
		example: "  raftka -b kafka-0:9093 --security-protocol SASL_SSL --username alice --ca-file ca.pem profile create prod --password-env PROD_PASSWORD\n  raftka topic list                  # with the current profile\n  raftka --profile dev topic list",
		build:   profileCreate},
	{path: "profile list", nargs: cobra.NoArgs, short: "List the profiles; * marks the current one", example: "  raftka profile list", build: noFlags(profileList)},
	{path: "profile use", args: "NAME", nargs: oneArg("name the profile"), short: "Make a profile the current one", example: "  raftka profile use prod", build: noFlags(profileChange(false))},
	{path: "profile delete", args: "NAME", nargs: oneArg("name the profile"), short: "Delete a profile", example: "  raftka profile delete dev", build: noFlags(profileChange(true))},
	{path: "cluster info", nargs: cobra.NoArgs, short: "Show the brokers, the controller and the cluster id", example: "  raftka cluster info -o json", build: noFlags(clusterInfo)},
	{path: "cluster health", nargs: cobra.NoArgs, short: "Check that every broker is up and every partition led and in sync",
		long: "Check that every broker is up and ready, the metadata group led, and every partition led and fully in sync, and show what each broker's /safe-to-restart says. " +
			"Exits 1 when the cluster is not healthy, so that scripts can wait on it.",
		example: "  raftka cluster health && echo healthy", build: noFlags(clusterHealthCommand)},
}

// oneArg wants exactly one argument, and says what it is for.
func oneArg(what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usagef("%s", what)
		}
		return nil
	}
}

// newRoot builds the command tree; *ran turns true once a command's own
// run began, so that run can tell cobra's refusals from the cluster's.
func newRoot(e *env) (*cobra.Command, *bool) {
	ran := new(bool)
	g := &globals{}
	root := &cobra.Command{
		Use:   "raftka",
		Short: "Raftka's command-line tool: topics, records, consumer groups, transactions, users, ACLs, quotas and the cluster",
		Long: "raftka speaks only the Kafka protocol, so it works against any broker of the cluster.\n\n" +
			"The brokers come from -b/--brokers, else $RAFTKA_BROKERS, else 127.0.0.1:9092.\n" +
			"A listener that is not PLAINTEXT takes the security flags below, each also as $RAFTKA_<NAME>\n" +
			"(RAFTKA_SECURITY_PROTOCOL, ...); give the password in $RAFTKA_PASSWORD rather than on the command line.\n\n" +
			"Exit codes: 0 done, 1 the cluster refused or failed, 2 a mistake in the command line.",
		Version:           versionString(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return e.setUp(cmd, g, true)
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVarP(&g.brokers, "brokers", "b", defaultBrokers, "the brokers to bootstrap from, host:port,... ($RAFTKA_BROKERS, else the profile's)")
	pf.StringVarP(&g.output, "output", "o", "table", "table or json")
	pf.StringVar(&g.profile, "profile", "", "the profile to take the brokers and security settings from ($RAFTKA_PROFILE, else the current one; raftka profile)")
	for _, f := range securityFlags(&g.sec) {
		pf.StringVar(f.target, f.name, "", f.usage+" ($RAFTKA_"+strings.ToUpper(strings.ReplaceAll(f.name, "-", "_"))+")")
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	parents := map[string]*cobra.Command{"": root}
	for _, group := range groups {
		words := strings.Fields(group.name)
		c := &cobra.Command{Use: words[len(words)-1], Short: group.short, Args: subcommandArgs, RunE: helpOnly}
		parents[group.name] = c
		parents[strings.Join(words[:len(words)-1], " ")].AddCommand(c)
	}
	// The profile commands run without one: a profile being made, or the
	// current one being deleted, is not the one to connect with.
	parents["profile"].PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return e.setUp(cmd, g, false) }
	for _, s := range specs {
		words := strings.Fields(s.path)
		parent := parents[strings.Join(words[:len(words)-1], " ")]
		parent.AddCommand(s.command(words[len(words)-1], e, ran))
	}
	root.AddCommand(&cobra.Command{Use: "version", Short: "Print the version and commit of this build", Args: cobra.NoArgs,
		Long:             "Print the release and the commit this build is of, and the Go that built it; --version says the same.",
		Example:          "  raftka version",
		PersistentPreRun: func(*cobra.Command, []string) {},
		Run:              func(cmd *cobra.Command, _ []string) { _, _ = fmt.Fprintln(cmd.OutOrStdout(), versionString()) }})
	return root, ran
}

// command is the spec as a cobra command named name.
func (s spec) command(name string, e *env, ran *bool) *cobra.Command {
	c := &cobra.Command{Use: strings.TrimSpace(name + " " + s.args), Short: s.short, Long: s.long, Example: s.example, Args: s.nargs}
	if c.Long == "" {
		c.Long = s.short + "."
	}
	run := s.build(c.Flags())
	c.RunE = func(cmd *cobra.Command, args []string) error {
		*ran = true
		return run(cmd.Context(), e, args)
	}
	return c
}

// subcommandArgs refuses what is not one of a group's commands.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return nil
}

// helpOnly is what a group runs without a command: its help.
func helpOnly(cmd *cobra.Command, _ []string) error { return cmd.Help() }

// globals are the global flags' values.
type globals struct {
	brokers, output, profile string
	sec                      clientsecurity.Settings
}

const defaultBrokers = "127.0.0.1:9092"

// setUp fills e from the global flags, else the environment, else the
// profile (unless withProfile is false: the profile commands), else the
// defaults, and checks them. The environment is not the flags' default,
// which help would print, password and all.
func (e *env) setUp(cmd *cobra.Command, g *globals, withProfile bool) error {
	if g.output != "table" && g.output != "json" {
		return usagef("-o %s: want table or json", g.output)
	}
	e.json = g.output == "json"
	var fromProfile clientsecurity.Settings
	brokers := ""
	if withProfile {
		p, err := activeProfile(g.profile)
		if err != nil {
			return err
		}
		if p != nil {
			brokers, fromProfile = p.settings()
		}
	}
	changed := cmd.Flags().Changed
	if changed("brokers") {
		brokers = g.brokers
	} else if v := os.Getenv("RAFTKA_BROKERS"); v != "" {
		brokers = v
	} else if brokers == "" {
		brokers = defaultBrokers
	}
	env, profiled := securityFlags(securityFromEnv()), securityFlags(&fromProfile)
	for i, f := range securityFlags(&g.sec) {
		if !changed(f.name) {
			*f.target = cmp.Or(*env[i].target, *profiled[i].target)
		}
	}
	list, err := parseBrokers(brokers)
	if err != nil {
		return err
	}
	e.brokers, e.security = list, g.sec
	if e.connect, err = g.sec.ClientOpts(); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// parseBrokers checks a host:port list, as a mistake there would
// otherwise surface as a connection error.
func parseBrokers(s string) ([]string, error) {
	list := splitBrokers(s)
	if len(list) == 0 {
		return nil, usagef("-b %q: name at least one broker, host:port", s)
	}
	for _, b := range list {
		host, port, err := net.SplitHostPort(b)
		if err != nil || host == "" {
			return nil, usagef("-b %s: want host:port", b)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, usagef("-b %s: the port must be a number from 1 to 65535", b)
		}
	}
	return list, nil
}
