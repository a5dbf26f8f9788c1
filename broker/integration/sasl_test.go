package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/raftka/raftka/broker/brokertest"
)

// saslAddrs are the brokers' SASL_PLAINTEXT listener addresses.
func saslAddrs(c *brokertest.Cluster) []string {
	var out []string
	for _, b := range c.Brokers {
		out = append(out, b.Listeners["CLIENT"])
	}
	return out
}

// saslClient is a client of the SASL listener; its first request is
// Metadata, so that an authentication failure surfaces at once.
func saslClient(t *testing.T, c *brokertest.Cluster, mechanism sasl.Mechanism, opts ...kgo.Opt) (*kgo.Client, error) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(saslAddrs(c)...), kgo.SASL(mechanism), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
	return cl, err
}

// TestSASLScramAuthentication: users made with AlterUserScramCredentials
// (kadm, as kafka-configs.sh does) authenticate with SCRAM-SHA-256 and
// SCRAM-SHA-512 on a SASL_PLAINTEXT listener, from franz-go and kcat, are
// told that listener's addresses, re-authenticate when their session
// ends (KIP-368), and keep their credentials across a restart of every
// broker; kafka-python's older exchange (SaslHandshake v0, bare SASL
// frames) works too, even with a token written right behind its
// handshake; a wrong password and an unknown user are refused alike, PLAIN
// is refused without TLS, and a connection that does not authenticate is
// closed.
func TestSASLScramAuthentication(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3,
		Listeners:  []brokertest.Listener{{Name: "CLIENT", Protocol: "SASL_PLAINTEXT"}},
		ExtraFlags: []string{"--sasl-authentication-timeout", "2s", "--sasl-session-lifetime", "3s"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := c.Admin()
	c.CreateTopic("secured", 3, 3, nil)

	altered, err := admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
	})
	if err != nil || !altered.Ok() {
		t.Fatalf("creating users: %v %+v", err, altered)
	}
	// The broker's own checks, past kadm's: a raw request.
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	alter.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "carol", Mechanism: 1}}
	upsert := func(name string, mechanism int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		return kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: name, Mechanism: mechanism, Iterations: iterations, Salt: []byte("salt"), SaltedPassword: make([]byte, 64)}
	}
	alter.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsert("dave", 2, 100), upsert("erin", 3, 4096), upsert("eve", 2, 4096), upsert("eve", 2, 8192)}
	resp, err := alter.RequestWith(ctx, c.Client())
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, r := range resp.Results {
		codes[r.User] = r.ErrorCode
	}
	if want := map[string]int16{"carol": kerr.ResourceNotFound.Code, "dave": kerr.UnacceptableCredential.Code, "erin": kerr.UnsupportedSaslMechanism.Code,
		"eve": kerr.DuplicateResource.Code}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("refused credential changes: %v, want %v", codes, want)
	}
	// Without --authorizer acl, the ACL APIs say so.
	describeACLs := kmsg.NewPtrDescribeACLsRequest()
	describeACLs.ResourceType, describeACLs.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describeACLs.Operation, describeACLs.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if aclResp, err := describeACLs.RequestWith(ctx, c.Client()); err != nil || aclResp.ErrorCode != kerr.SecurityDisabled.Code {
		t.Errorf("DescribeAcls without the authorizer: %v, error code %v, want SECURITY_DISABLED", err, aclResp)
	}
	described, err := admin.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(described["alice"].CredInfos, described["bob"].CredInfos, len(described)); got != "[SCRAM-SHA-512=iterations=8192] [SCRAM-SHA-256=iterations=4096] 2" {
		t.Errorf("described credentials: %s", got)
	}

	// A credential reaches each broker as it applies the metadata, a
	// moment after the answer (in Kafka too): the first login may be early.
	var alice *kgo.Client
	waitFor(t, 10*time.Second, "alice to log in with SCRAM-SHA-512", func() bool {
		alice, err = saslClient(t, c, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())
		return err == nil
	})
	brokers, err := kadm.NewClient(alice).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, br := range brokers.Brokers {
		if want := c.Brokers[br.NodeID].Listeners["CLIENT"]; net.JoinHostPort(br.Host, fmt.Sprint(br.Port)) != want {
			t.Errorf("a client of the SASL listener is told broker %d is at %s:%d, want %s", br.NodeID, br.Host, br.Port, want)
		}
	}
	// Produce across several session lifetimes: each connection
	// re-authenticates before its session ends, and no request fails.
	for i := 0; i < 25; i++ {
		if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "secured", Value: fmt.Appendf(nil, "alice-%d", i)}).FirstErr(); err != nil {
			t.Fatalf("alice's record %d: %v", i, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	reauthenticated := 0.0
	for i := range c.Brokers {
		v, _ := c.Metric(i, "raftka_sasl_authentications_total", `mechanism="SCRAM-SHA-512"`, `result="reauthentication"`)
		reauthenticated += v
	}
	if reauthenticated == 0 {
		t.Error("no connection re-authenticated within 6 s of 3 s sessions")
	}
	if _, err := saslClient(t, c, scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism()); err != nil {
		t.Fatalf("bob with SCRAM-SHA-256: %v", err)
	}

	var messages []string
	for _, tc := range []struct {
		what      string
		mechanism sasl.Mechanism
		want      error
	}{
		{"a wrong password", scram.Auth{User: "alice", Pass: "guess"}.AsSha512Mechanism(), kerr.SaslAuthenticationFailed},
		{"an unknown user", scram.Auth{User: "mallory", Pass: "alice-secret"}.AsSha512Mechanism(), kerr.SaslAuthenticationFailed},
		{"alice's password under the mechanism she has none for", scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), kerr.SaslAuthenticationFailed},
		{"PLAIN without TLS", plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), kerr.UnsupportedSaslMechanism},
	} {
		_, err := saslClient(t, c, tc.mechanism)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, err, tc.want)
		}
		if err != nil && errors.Is(tc.want, kerr.SaslAuthenticationFailed) {
			messages = append(messages, strings.ReplaceAll(err.Error(), "SCRAM-SHA-256", "SCRAM-SHA-512"))
		}
	}
	for _, m := range messages[1:] {
		if m != messages[0] {
			t.Errorf("failed authentications tell apart: %q and %q", messages[0], m)
		}
	}

	// Without authentication, a request closes the connection, and so
	// does silence past --sasl-authentication-timeout.
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	frame := md.AppendTo([]byte{0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xff}) // Metadata v1, correlation 1, no client id
	if err := closedAfter(c.Brokers[0].Listeners["CLIENT"], frame); err != nil {
		t.Errorf("Metadata before authentication: %v", err)
	}
	if err := closedAfter(c.Brokers[0].Listeners["CLIENT"], nil); err != nil {
		t.Errorf("a connection that never authenticates: %v", err)
	}

	// A bare token written right behind the SaslHandshake v0 that
	// announces it, in one write, is read as a token, not as a request.
	conn, err := net.Dial("tcp", c.Brokers[0].Listeners["CLIENT"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	handshake := kmsg.NewPtrSASLHandshakeRequest()
	handshake.Version, handshake.Mechanism = 0, "SCRAM-SHA-256"
	clientFirst := "n,,n=bob,r=pipelinednonce"
	frames := kmsg.NewRequestFormatter().AppendRequest(nil, handshake, 1)
	frames = binary.BigEndian.AppendUint32(frames, uint32(len(clientFirst)))
	if _, err := conn.Write(append(frames, clientFirst...)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	handshaken := kmsg.NewPtrSASLHandshakeResponse()
	readResponse(t, conn, 1, handshaken)
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); handshaken.ErrorCode != 0 || err != nil {
		t.Fatalf("SaslHandshake v0 answered error %d; the token behind it: %v", handshaken.ErrorCode, err)
	}
	serverFirst := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, serverFirst); err != nil || !strings.HasPrefix(string(serverFirst), "r=pipelinednonce") {
		t.Errorf("the token behind a SaslHandshake v0 was answered %q (%v), want SCRAM's server-first message", serverFirst, err)
	}

	// kcat (librdkafka) with SCRAM-SHA-512.
	scramFlags := []string{"-b", strings.Join(saslAddrs(c), ","), "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-512",
		"-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}
	kcat(t, "kcat-1\nkcat-2\nkcat-3\n", append(scramFlags, "-P", "-t", "secured", "-p", "0")...)
	got := kcat(t, "", append(scramFlags, "-C", "-t", "secured", "-o", "beginning", "-e", "-q", "-f", "%s\n")...)
	for _, want := range []string{"alice-0", "alice-24", "kcat-1", "kcat-3"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("kcat over SASL read no %q", want)
		}
	}

	// kafka-python: SaslHandshake v0, then the SCRAM messages in bare
	// frames outside the Kafka protocol.
	runClientWith(t, saslAddrs(c), []string{"SASL_MECHANISM=SCRAM-SHA-256", "SASL_USERNAME=bob", "SASL_PASSWORD=bob-secret"},
		"kafka-python-sasl", filepath.Join("testdata", "kafka-python"), debianPython, "client.py").check(t, clientRecords)

	// The credentials are in the metadata's Raft group: every broker
	// restarted, alice still gets in; once deleted, she does not.
	c.CrashAll()
	if _, err := saslClient(t, c, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()); err != nil {
		t.Fatalf("alice after every broker restarted: %v", err)
	}
	admin = kadm.NewClient(c.Client())
	if deleted, err := admin.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha512}}, nil); err != nil || !deleted.Ok() {
		t.Fatalf("deleting alice: %v %+v", err, deleted)
	}
	aliceAt := func(i int) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers[i].Listeners["CLIENT"]), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
			kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
		return err
	}
	for i := range c.Brokers {
		// Each broker applies the deletion from its own copy of the
		// metadata; it may be a moment behind.
		deadline := time.Now().Add(10 * time.Second)
		err := aliceAt(i)
		for !errors.Is(err, kerr.SaslAuthenticationFailed) && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			err = aliceAt(i)
		}
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("broker %d after alice's credential was deleted: %v", i, err)
		}
	}
}

// closedAfter connects to addr, writes frame (if any) with its size, and
// reports an error unless the broker closes the connection within 10 s.
func closedAfter(addr string, frame []byte) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if frame != nil {
		sized := append([]byte{byte(len(frame) >> 24), byte(len(frame) >> 16), byte(len(frame) >> 8), byte(len(frame))}, frame...)
		if _, err := conn.Write(sized); err != nil {
			return err
		}
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := conn.Read(make([]byte, 1024))
	if errors.Is(err, io.EOF) || isReset(err) {
		return nil
	}
	return fmt.Errorf("read %d bytes (%v), want the connection closed", n, err)
}

// mountSecret lays out a directory as Kubernetes mounts a Secret: the
// files are links through ..data to a versioned directory, which an update
// replaces at once.
func mountSecret(t *testing.T, dir string, version int, data map[string]string) {
	t.Helper()
	versioned := fmt.Sprintf("..v%d", version)
	if err := os.Mkdir(filepath.Join(dir, versioned), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, value := range data {
		if err := os.WriteFile(filepath.Join(dir, versioned, name), []byte(value), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink(versioned, filepath.Join(dir, "..data.new")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data.new"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// TestSCRAMUsersDirectory: a super user whose password only a mounted
// Secret holds (--scram-users-dir) can administer a cluster with the ACL
// authorizer from the start; its credential comes back when deleted and
// follows the Secret when it is rotated.
func TestSCRAMUsersDirectory(t *testing.T) {
	users := t.TempDir()
	mountSecret(t, users, 1, map[string]string{"operator": "first-secret\n"})
	c := brokertest.Start(t, brokertest.Options{Brokers: 3,
		Listeners:  []brokertest.Listener{{Name: "CLIENT", Protocol: "SASL_PLAINTEXT"}},
		ExtraFlags: []string{"--scram-users-dir", users, "--authorizer", "acl", "--super-users", "User:operator"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	operator := func(password string) (*kgo.Client, error) {
		return saslClient(t, c, scram.Auth{User: "operator", Pass: password}.AsSha512Mechanism())
	}
	var admin *kgo.Client
	waitFor(t, 30*time.Second, "the operator's credential from the directory", func() bool {
		cl, err := operator("first-secret")
		admin = cl
		return err == nil
	})
	created, err := kadm.NewClient(admin).CreateTopic(ctx, 3, 3, nil, "administered")
	if err != nil || created.Err != nil {
		t.Fatalf("the super user creating a topic: %v %v", err, created.Err)
	}
	if _, err := kadm.NewClient(admin).AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "operator", Mechanism: kadm.ScramSha512}}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the deleted credential to be set again from the directory", func() bool {
		described, err := c.Admin().DescribeUserSCRAMs(ctx, "operator")
		return err == nil && described["operator"].Err == nil && len(described["operator"].CredInfos) == 1
	})
	// Each broker may set it again, each with a salt of its own, and the
	// broker asked above may have applied a setting that the one the
	// client reaches has not yet: the credential holds once they agree.
	waitFor(t, 10*time.Second, "the operator to authenticate with its credential set again", func() bool {
		_, err := operator("first-secret")
		return err == nil
	})
	mountSecret(t, users, 2, map[string]string{"operator": "second-secret"})
	waitFor(t, 30*time.Second, "the rotated password to hold", func() bool {
		_, err := operator("second-secret")
		return err == nil
	})
	if _, err := operator("first-secret"); err == nil {
		t.Error("the password rotated away still authenticates")
	}
}
