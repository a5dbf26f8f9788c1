package integration

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/raftka/raftka/broker/brokertest"
)

// TestACLs: with --authorizer acl, ACLs made through CreateAcls (kadm,
// as kafka-acls.sh) decide what each SCRAM user may do, with the error
// codes Kafka's clients know: literal and prefixed patterns, a deny that
// overrides an allow, Metadata listing only describable topics, a super
// user, and a deletion that revokes.
func TestACLs(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3,
		Listeners:  []brokertest.Listener{{Name: "CLIENT", Protocol: "SASL_PLAINTEXT"}},
		ExtraFlags: []string{"--authorizer", "acl", "--super-users", "User:admin"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The inter-broker listener is trusted: the set-up goes through it.
	for _, topic := range []string{"orders", "team-a.payments", "team-a.secret", "audit"} {
		c.CreateTopic(topic, 1, 3, nil)
	}
	var users []kadm.UpsertSCRAM
	for _, u := range []string{"admin", "alice", "bob", "carol"} {
		users = append(users, kadm.UpsertSCRAM{User: u, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: u + "-secret"})
	}
	if altered, err := c.Admin().AlterUserSCRAMs(ctx, nil, users); err != nil || !altered.Ok() {
		t.Fatalf("creating users: %v %+v", err, altered)
	}
	as := func(user string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(saslAddrs(c)...), kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha512Mechanism()),
			kgo.RequestRetries(2), kgo.RecordRetries(2), kgo.DisableIdempotentWrite())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	admin := kadm.NewClient(as("admin"))
	acls := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpWrite, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:alice").Groups("billing").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:bob").Topics("team-a.").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Deny("User:bob").Topics("team-a.secret").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Deny("User:*").Topics("audit").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:alice").Topics("audit").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral),
	}
	for _, b := range acls {
		created, err := admin.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range created {
			if r.Err != nil {
				t.Fatalf("creating %s %s on %s: %v", r.Principal, r.Operation, r.Name, r.Err)
			}
		}
	}
	// Without an ACL of its own, carol may not even create ACLs.
	if created, err := kadm.NewClient(as("carol")).CreateACLs(ctx, kadm.NewACLs().Allow("User:carol").Topics("orders").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral)); err == nil && (len(created) == 0 || !errors.Is(created[0].Err, kerr.ClusterAuthorizationFailed)) {
		t.Errorf("carol creating an ACL: %+v", created)
	}

	produce := func(cl *kgo.Client, topic string) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
	}
	alice, bob, carol := as("alice"), as("bob"), as("carol")
	for _, tc := range []struct {
		who   string
		cl    *kgo.Client
		topic string
		want  error
	}{
		{"alice, literal allow", alice, "orders", nil},
		{"alice, no ACL", alice, "team-a.payments", kerr.TopicAuthorizationFailed},
		{"bob, prefixed allow", bob, "team-a.payments", nil},
		{"bob, a deny of READ leaves WRITE", bob, "team-a.secret", nil},
		{"alice, a deny for everyone overrides her allow", alice, "audit", kerr.TopicAuthorizationFailed},
		{"carol, no ACL at all", carol, "orders", kerr.TopicAuthorizationFailed},
		{"admin, a super user", as("admin"), "audit", nil},
	} {
		if err := produce(tc.cl, tc.topic); !errors.Is(err, tc.want) {
			t.Errorf("%s: producing to %s: %v, want %v", tc.who, tc.topic, err, tc.want)
		}
	}

	// Reading: bob's deny of READ on team-a.secret.
	if err := fetchError(ctx, bob, "team-a.payments"); err != nil {
		t.Errorf("bob reading team-a.payments: %v", err)
	}
	if err := fetchError(ctx, bob, "team-a.secret"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob reading team-a.secret: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Groups: alice may commit as billing, not as another group.
	aliceAdmin := kadm.NewClient(alice)
	offsets := kadm.Offsets{}
	offsets.AddOffset("orders", 0, 1, -1)
	if committed, err := aliceAdmin.CommitOffsets(ctx, "billing", offsets); err != nil || committed.Error() != nil {
		t.Errorf("alice committing as billing: %v %v", err, committed.Error())
	}
	if committed, err := aliceAdmin.CommitOffsets(ctx, "payroll", offsets); !errors.Is(err, kerr.GroupAuthorizationFailed) && (err != nil || !errors.Is(committed.Error(), kerr.GroupAuthorizationFailed)) {
		t.Errorf("alice committing as payroll: %v %v, want GROUP_AUTHORIZATION_FAILED", err, committed.Error())
	}

	// Metadata lists what each may describe.
	for who, want := range map[string][]string{"alice": {"orders"}, "bob": {"team-a.payments", "team-a.secret"}, "carol": nil} {
		listed, err := kadm.NewClient(as(who)).ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := listed.Names(); !slices.Equal(got, want) {
			t.Errorf("%s lists topics %v, want %v", who, got, want)
		}
	}
	// Creating a topic needs CREATE: bob has it on team-a.* alone.
	if created, err := kadm.NewClient(bob).CreateTopic(ctx, 1, 3, nil, "team-a.new"); err != nil || created.Err != nil {
		t.Errorf("bob creating team-a.new: %v %v", err, created.Err)
	}
	if created, _ := kadm.NewClient(bob).CreateTopic(ctx, 1, 3, nil, "elsewhere"); !errors.Is(created.Err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob creating elsewhere: %v, want TOPIC_AUTHORIZATION_FAILED", created.Err)
	}

	// Administration of topics and groups asks per resource: bob has ALL
	// on team-a.*, alice only READ and WRITE on orders and READ on billing.
	if grown, err := kadm.NewClient(bob).CreatePartitions(ctx, 1, "team-a.payments"); err != nil || grown.Error() != nil {
		t.Errorf("bob adding a partition to team-a.payments: %v %v", err, grown.Error())
	}
	if grown, _ := aliceAdmin.CreatePartitions(ctx, 1, "orders"); !errors.Is(grown.Error(), kerr.TopicAuthorizationFailed) {
		t.Errorf("alice adding a partition to orders: %v, want TOPIC_AUTHORIZATION_FAILED", grown.Error())
	}
	truncate := kadm.Offsets{}
	truncate.AddOffset("orders", 0, 0, -1)
	if deleted, _ := aliceAdmin.DeleteRecords(ctx, truncate); !errors.Is(deleted.Error(), kerr.TopicAuthorizationFailed) {
		t.Errorf("alice deleting records of orders: %v, want TOPIC_AUTHORIZATION_FAILED", deleted.Error())
	}
	if deletedGroups, _ := aliceAdmin.DeleteGroups(ctx, "billing"); !errors.Is(deletedGroups.Error(), kerr.GroupAuthorizationFailed) {
		t.Errorf("alice deleting group billing: %v, want GROUP_AUTHORIZATION_FAILED", deletedGroups.Error())
	}
	// Cluster administration needs the cluster operation; carol has none.
	if _, err := kadm.NewClient(carol).ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"orders": {0: {}}}); err == nil {
		t.Error("carol electing leaders was not refused")
	}

	// DescribeAcls shows them; DeleteAcls revokes alice's write.
	described, err := admin.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow("User:alice").AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(described) != 1 || described[0].Err != nil || len(described[0].Described) != 4 {
		t.Fatalf("alice's allows described: %v %+v", err, described)
	}
	deleted, err := admin.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("orders").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(deleted) != 1 || len(deleted[0].Deleted) != 1 {
		t.Fatalf("deleting alice's write on orders: %v %+v", err, deleted)
	}
	deadline := time.Now().Add(10 * time.Second)
	for err := produce(as("alice"), "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed); err = produce(as("alice"), "orders") {
		if time.Now().After(deadline) {
			t.Fatalf("alice producing after her ACL was deleted: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// fetchError reads a topic's partition 0 from the start and returns the
// first error a fetch reports, or nil once a record came.
func fetchError(ctx context.Context, cl *kgo.Client, topic string) error {
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
	defer cl.RemoveConsumePartitions(map[string][]int32{topic: {0}})
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for {
		fetches := cl.PollFetches(pctx)
		for _, e := range fetches.Errors() {
			if e.Topic == topic || e.Topic == "" {
				return e.Err
			}
		}
		if fetches.NumRecords() > 0 {
			return nil
		}
		if pctx.Err() != nil {
			return pctx.Err()
		}
	}
}
