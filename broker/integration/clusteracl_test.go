package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/raftka/raftka/broker/brokertest"
)

// TestKafkasAnswersToAUserWithoutClusterACLs: alice holds ACLs on topics
// and groups and none on the cluster, and connects over a SASL_SSL
// listener that also requires a client certificate (KIP-684). She is
// answered as Kafka answers her: DescribeCluster lists the brokers, the
// cluster-administration APIs say CLUSTER_AUTHORIZATION_FAILED rather
// than closing the connection, and Metadata, DescribeCluster and
// DescribeGroups fill in what she may do when asked (KIP-430). kadm,
// kcat and librdkafka through confluent-kafka each make the calls.
func TestKafkasAnswersToAUserWithoutClusterACLs(t *testing.T) {
	c, ca, dir := securedCluster(t, "--authorizer", "acl", "--super-users", "User:admin", "--listener-ssl-client-auth", "SECURE=required")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c.CreateTopic("orders", 1, 3, nil)
	trusted := c.Admin()
	if altered, err := trusted.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "admin", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "admin-secret"}}); err != nil || !altered.Ok() {
		t.Fatalf("creating admin: %v %+v", err, altered)
	}
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpRead, kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:alice").Topics("kip684").Groups("kip684").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternPrefixed),
	} {
		if created, err := trusted.CreateACLs(ctx, b); err != nil || created[0].Err != nil {
			t.Fatalf("creating alice's ACLs: %v %+v", err, created)
		}
	}

	// Over SASL_SSL with a certificate: without one the handshake fails.
	alice := secureClient(t, c, ca, dir, "alice", true)
	if _, err := kadm.NewClient(secureClient(t, c, ca, dir, "alice", false)).ListTopics(ctx); err == nil {
		t.Error("a client without a certificate was served on the SASL_SSL listener that requires one")
	}

	// DescribeCluster: the brokers for anyone; the cluster's operations
	// only for a principal that may describe it.
	described := describeCluster(ctx, t, alice)
	if described.ErrorCode != 0 || len(described.Brokers) != 3 || described.ClusterAuthorizedOperations != 0 {
		t.Errorf("alice's DescribeCluster: error %v, %d brokers, operations %d; want no error, 3 brokers, none",
			kerr.ErrorForCode(described.ErrorCode), len(described.Brokers), described.ClusterAuthorizedOperations)
	}
	allCluster := operationBits(kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe)
	if ops := describeCluster(ctx, t, secureClient(t, c, ca, dir, "admin", true)).ClusterAuthorizedOperations; ops != allCluster {
		t.Errorf("the super user's cluster operations: %b, want %b", ops, allCluster)
	}

	// Metadata: READ and WRITE on orders, and the DESCRIBE they imply.
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	md.IncludeTopicAuthorizedOperations = true
	mdResp, err := md.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	if want := operationBits(kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe); len(mdResp.Topics) != 1 || mdResp.Topics[0].AuthorizedOperations != want {
		t.Errorf("alice's operations on orders: %+v, want %b", mdResp.Topics, want)
	}

	deniedClusterAPIs(ctx, t, alice)
	kcatWithCertificateAndSCRAM(t, c, dir)

	// librdkafka's round trip as alice, with her certificate and password.
	props := strings.Join([]string{"security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512", "sasl.username=alice",
		"sasl.password=alice-secret", "ssl.ca.location=" + filepath.Join(dir, "ca.pem"),
		"ssl.certificate.location=" + filepath.Join(dir, "client.pem"), "ssl.key.location=" + filepath.Join(dir, "client-key.pem")}, "\n")
	runClientWith(t, listenerAddrs(c, "SECURE"), []string{"KAFKA_PROPERTIES=" + props}, "kip684", confluentKafkaDir(t), debianPython, "client.py").check(t, clientRecords)

	groups := kmsg.NewPtrDescribeGroupsRequest()
	groups.Groups, groups.IncludeAuthorizedOperations = []string{"kip684-group"}, true
	groupsResp, err := groups.RequestWith(ctx, alice)
	if want := operationBits(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete); err != nil || len(groupsResp.Groups) != 1 || groupsResp.Groups[0].AuthorizedOperations != want {
		t.Errorf("alice's operations on her group: %v %+v, want %b", err, groupsResp, want)
	}
}

// deniedClusterAPIs: each cluster-administration API answers alice with
// CLUSTER_AUTHORIZATION_FAILED, and her connection stays usable.
func deniedClusterAPIs(ctx context.Context, t *testing.T, cl *kgo.Client) {
	t.Helper()
	alice := kadm.NewClient(cl)
	orders := kadm.TopicsSet{"orders": {0: {}}}
	if _, err := alice.DescribeAllLogDirs(ctx, orders); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice's DescribeLogDirs: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if _, err := alice.ListPartitionReassignments(ctx, orders); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice's ListPartitionReassignments: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if _, err := alice.ElectLeaders(ctx, kadm.ElectPreferredReplica, orders); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice's ElectLeaders: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	quorum := kmsg.NewPtrDescribeQuorumRequest()
	quorum.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	if resp, err := quorum.RequestWith(ctx, cl); err != nil || resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice's DescribeQuorum: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, resp)
	}
	if _, err := alice.ListTopics(ctx); err != nil {
		t.Errorf("alice's Metadata after the refusals: %v", err)
	}
}

// kcatWithCertificateAndSCRAM: kcat lists the cluster over the SASL_SSL
// listener with alice's password and a certificate, and fails without the
// certificate.
func kcatWithCertificateAndSCRAM(t *testing.T, c *brokertest.Cluster, dir string) {
	t.Helper()
	args := []string{"-b", listenerAddrs(c, "SECURE")[0], "-m", "10", "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
		"-X", "sasl.username=alice", "-X", "sasl.password=alice-secret", "-X", "ssl.ca.location=" + filepath.Join(dir, "ca.pem"), "-L", "-t", "orders"}
	withCert := append([]string{"-X", "ssl.certificate.location=" + filepath.Join(dir, "client.pem"), "-X", "ssl.key.location=" + filepath.Join(dir, "client-key.pem")}, args...)
	if out := kcat(t, "", withCert...); !strings.Contains(out, `topic "orders" with 1 partitions`) {
		t.Errorf("kcat -L as alice with a certificate:\n%s", out)
	}
	var errb bytes.Buffer
	cmd := exec.Command("kcat", args...)
	cmd.Stderr = &errb
	if out, err := cmd.Output(); err == nil && strings.Contains(string(out), `topic "orders"`) {
		t.Errorf("kcat without a certificate listed the cluster:\n%s", out)
	}
}

// secureClient is a franz-go client of the SECURE listener as user, with
// carol's certificate if withCert.
func secureClient(t *testing.T, c *brokertest.Cluster, ca *brokertest.CA, dir, user string, withCert bool) *kgo.Client {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if withCert {
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(listenerAddrs(c, "SECURE")...), kgo.DialTLSConfig(cfg),
		kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha512Mechanism()), kgo.RequestRetries(2), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func describeCluster(ctx context.Context, t *testing.T, cl *kgo.Client) *kmsg.DescribeClusterResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// operationBits is Kafka's authorized-operations bit field of ops.
func operationBits(ops ...kmsg.ACLOperation) int32 {
	var bits int32
	for _, op := range ops {
		bits |= 1 << op
	}
	return bits
}
