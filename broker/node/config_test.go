package node

import (
	"strings"
	"testing"

	"github.com/raftka/raftka/broker/security"
)

// The inter-broker listener (the first) is one the brokers can reach each
// other on: with no authentication, or SCRAM as --inter-broker-user, over
// TLS only with a CA to check the peers' certificates against.
func TestInterBrokerListenerSettings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		protocol security.SecurityProtocol
		user, ca string
		refused  string // part of the error; empty when accepted
	}{
		{"plaintext", security.Plaintext, "", "", ""},
		{"scram", security.SASLPlaintext, "raftka-broker", "", ""},
		{"scram without a user", security.SASLPlaintext, "", "", "--inter-broker-user"},
		{"scram over TLS", security.SASLSSL, "raftka-broker", "ca.crt", ""},
		{"TLS without a CA to trust", security.SASLSSL, "raftka-broker", "", "--inter-broker-ssl-ca-file"},
		{"TLS without a user", security.SASLSSL, "", "ca.crt", "--inter-broker-user"},
		{"certificates", security.SSL, "", "ca.crt", "do not authenticate to each other with certificates"},
		{"a CA for a plaintext listener", security.SASLPlaintext, "raftka-broker", "ca.crt", "needs a SASL_SSL inter-broker listener"},
		{"a user for a plaintext listener", security.Plaintext, "raftka-broker", "", "needs a SASL_PLAINTEXT or SASL_SSL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{ID: 0, DataDir: t.TempDir(), MetadataVoters: map[int32]string{0: "127.0.0.1:1"},
				Listeners:       []security.Listener{{Name: "REPLICATION", Listen: "127.0.0.1:0", Advertised: "127.0.0.1:1", Protocol: tc.protocol}, {Name: "CLIENTS", Protocol: security.Plaintext}},
				InterBrokerUser: tc.user, InterBrokerCAFile: tc.ca, ScramUsersDir: "users"}
			err := c.validate()
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("got %v, want an error naming %q", err, tc.refused)
			}
		})
	}
}
