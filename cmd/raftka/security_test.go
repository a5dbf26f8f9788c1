package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftka/raftka/broker/brokertest"
)

// Users made with the command log in through a SASL_SSL listener, with
// the settings as flags and from the environment; a wrong password and a
// deleted user are refused.
func TestUsersAndSecuredListeners(t *testing.T) {
	dir := t.TempDir()
	ca := brokertest.NewCA(t)
	cert, key := ca.Issue(t, 2, "broker", false)
	for name, data := range map[string][]byte{"ca.pem": ca.PEM, "cert.pem": cert, "key.pem": key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, Listeners: []brokertest.Listener{{Name: "SECURE", Protocol: "SASL_SSL"}},
		ExtraFlags: []string{"--ssl-certificate-file", filepath.Join(dir, "cert.pem"), "--ssl-key-file", filepath.Join(dir, "key.pem")}})
	var secure []string
	for _, b := range c.Brokers {
		secure = append(secure, b.Listeners["SECURE"])
	}
	asAlice := func(password string, args ...string) (int, string, string) {
		return raftka(t, c, "", append([]string{"-b", strings.Join(secure, ","), "--security-protocol", "SASL_SSL", "--ca-file", filepath.Join(dir, "ca.pem"),
			"--username", "alice", "--password", password}, args...)...)
	}

	if out := mustRaftka(t, c, "alice-secret\n", "user", "set-password", "alice"); !strings.Contains(out, "SCRAM-SHA-512 password of user alice") {
		t.Errorf("set-password said %q", out)
	}
	mustRaftka(t, c, "bob-secret\n", "user", "set-password", "bob", "--mechanism", "SCRAM-SHA-256", "--iterations", "4096")
	if out := strings.Join(strings.Fields(mustRaftka(t, c, "", "user", "list", "-o", "json")), ""); out != `[{"user":"alice","mechanisms":["SCRAM-SHA-512=iterations=8192"]},{"user":"bob","mechanisms":["SCRAM-SHA-256=iterations=4096"]}]` {
		t.Errorf("user list: %s", out)
	}
	if code, _, errOut := asAlice("alice-secret", "topic", "create", "secured", "--partitions", "2"); code != 0 {
		t.Fatalf("topic create as alice over SASL_SSL: exit %d: %s", code, errOut)
	}
	if code, _, _ := asAlice("guess", "topic", "list"); code != exitFailed {
		t.Errorf("a wrong password: exit %d, want %d", code, exitFailed)
	}
	t.Setenv("RAFTKA_SECURITY_PROTOCOL", "SASL_SSL")
	t.Setenv("RAFTKA_SASL_MECHANISM", "SCRAM-SHA-256")
	t.Setenv("RAFTKA_USERNAME", "bob")
	t.Setenv("RAFTKA_PASSWORD", "bob-secret")
	t.Setenv("RAFTKA_CA_FILE", filepath.Join(dir, "ca.pem"))
	code, out, errOut := raftka(t, c, "", "-b", strings.Join(secure, ","), "topic", "list")
	if code != 0 || !strings.Contains(out, "secured") {
		t.Errorf("topic list as bob from the environment: exit %d: %s%s", code, out, errOut)
	}
	t.Setenv("RAFTKA_SECURITY_PROTOCOL", "")
	t.Setenv("RAFTKA_SASL_MECHANISM", "")
	t.Setenv("RAFTKA_USERNAME", "")
	t.Setenv("RAFTKA_CA_FILE", "")

	mustRaftka(t, c, "", "user", "delete", "alice")
	if out := mustRaftka(t, c, "", "user", "list", "-o", "json"); strings.Contains(out, "alice") {
		t.Errorf("alice is listed after her deletion: %s", out)
	}
	if code, _, _ := asAlice("alice-secret", "topic", "list"); code != exitFailed {
		t.Errorf("a deleted user: exit %d, want %d", code, exitFailed)
	}
}

// ACLs made with the command decide what a user may do on a broker run
// with --authorizer acl, and removing them revokes it.
func TestACLCommands(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, Listeners: []brokertest.Listener{{Name: "CLIENT", Protocol: "SASL_PLAINTEXT"}},
		ExtraFlags: []string{"--authorizer", "acl"}})
	var clientAddrs []string
	for _, b := range c.Brokers {
		clientAddrs = append(clientAddrs, b.Listeners["CLIENT"])
	}
	mustRaftka(t, c, "", "topic", "create", "orders", "--partitions", "1")
	mustRaftka(t, c, "alice-secret\n", "user", "set-password", "alice")
	asAlice := func(stdin string, args ...string) (int, string, string) {
		return raftka(t, c, stdin, append([]string{"-b", strings.Join(clientAddrs, ","), "--username", "alice", "--password", "alice-secret"}, args...)...)
	}
	if code, _, _ := asAlice("refused\n", "produce", "orders"); code != exitFailed {
		t.Fatalf("alice producing without an ACL: exit %d, want %d", code, exitFailed)
	}
	if out := mustRaftka(t, c, "", "acl", "add", "--allow", "alice", "--operation", "write,describe", "--topic", "orders"); strings.Count(out, "added ALLOW User:alice") != 2 {
		t.Errorf("acl add said %q", out)
	}
	listed := strings.Join(strings.Fields(mustRaftka(t, c, "", "acl", "list", "--allow", "User:alice", "-o", "json")), "")
	for _, op := range []string{"WRITE", "DESCRIBE"} {
		if !strings.Contains(listed, `"principal":"User:alice","host":"*","resource":"TOPIC","name":"orders","pattern":"LITERAL","operation":"`+op+`","permission":"ALLOW"`) {
			t.Errorf("acl list shows no %s for alice: %s", op, listed)
		}
	}
	if code, _, errOut := asAlice("allowed\n", "produce", "orders"); code != 0 {
		t.Fatalf("alice producing with her ACL: exit %d: %s", code, errOut)
	}
	if out := mustRaftka(t, c, "", "acl", "remove", "--allow", "alice", "--operation", "write", "--topic", "orders"); !strings.Contains(out, "removed ALLOW User:alice WRITE") {
		t.Errorf("acl remove said %q", out)
	}
	if code, _, _ := asAlice("refused again\n", "produce", "orders"); code != exitFailed {
		t.Errorf("alice producing after her ACL was removed: exit %d, want %d", code, exitFailed)
	}
	if code, _, _ := raftka(t, c, "", "acl", "add", "--allow", "alice", "--topic", "orders"); code != exitUsage {
		t.Errorf("acl add without an operation: exit %d, want %d", code, exitUsage)
	}
}

// Quotas set with the command are what the brokers describe and enforce;
// deleting them leaves none.
func TestQuotaCommands(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 1})
	mustRaftka(t, c, "", "quota", "alter", "--user", "alice", "--set", "producer_byte_rate=1048576", "--set", "consumer_byte_rate=2097152")
	mustRaftka(t, c, "", "quota", "alter", "--default-client-id", "--set", "producer_byte_rate=65536")
	listed := strings.Join(strings.Fields(mustRaftka(t, c, "", "quota", "list", "-o", "json")), "")
	for _, want := range []string{`{"entity":"{user=alice}","quotas":{"consumer_byte_rate":2097152,"producer_byte_rate":1048576}}`,
		`{"entity":"{client-id=<default>}","quotas":{"producer_byte_rate":65536}}`} {
		if !strings.Contains(listed, want) {
			t.Errorf("quota list: %s, missing %s", listed, want)
		}
	}
	if out := mustRaftka(t, c, "", "quota", "list", "--user", "alice"); !strings.Contains(out, "{user=alice}") || strings.Contains(out, "client-id") {
		t.Errorf("quota list --user alice: %s", out)
	}
	if code, _, errOut := raftka(t, c, "", "quota", "alter", "--user", "alice", "--set", "request_percentage=50"); code != exitFailed ||
		!strings.Contains(errOut, "INVALID_REQUEST: ") || strings.Contains(errOut, "malformed") || !strings.Contains(errOut, "request_percentage") {
		t.Errorf("an unenforced quota: exit %d: %s", code, errOut)
	}
	if code, _, _ := raftka(t, c, "", "quota", "alter", "--user", "alice", "--default-user", "--delete", "producer_byte_rate"); code != exitUsage {
		t.Errorf("a user and the default user at once: exit %d, want %d", code, exitUsage)
	}
	mustRaftka(t, c, "", "quota", "alter", "--user", "alice", "--delete", "producer_byte_rate", "--delete", "consumer_byte_rate")
	if out := mustRaftka(t, c, "", "quota", "list", "-o", "json"); strings.Contains(out, "alice") {
		t.Errorf("alice's quotas outlived their deletion: %s", out)
	}
}
