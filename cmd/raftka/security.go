package main

import (
	"os"

	"github.com/raftka/raftka/internal/clientsecurity"
)

// securityFromEnv reads the security settings' environment variables,
// which the global flags override.
func securityFromEnv() *clientsecurity.Settings {
	return &clientsecurity.Settings{Protocol: os.Getenv("RAFTKA_SECURITY_PROTOCOL"), Mechanism: os.Getenv("RAFTKA_SASL_MECHANISM"),
		Username: os.Getenv("RAFTKA_USERNAME"), Password: os.Getenv("RAFTKA_PASSWORD"),
		CAFile: os.Getenv("RAFTKA_CA_FILE"), CertFile: os.Getenv("RAFTKA_CERT_FILE"), KeyFile: os.Getenv("RAFTKA_KEY_FILE")}
}

// securityFlag is a global flag that sets one of the settings.
type securityFlag struct {
	name   string
	target *string
	usage  string
}

// securityFlags are the global flags that set the settings.
func securityFlags(s *clientsecurity.Settings) []securityFlag {
	return []securityFlag{
		{"security-protocol", &s.Protocol, "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (default: inferred from the other security flags)"},
		{"sasl-mechanism", &s.Mechanism, "SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN"},
		{"username", &s.Username, "the SASL user"},
		{"password", &s.Password, "the SASL password; prefer $RAFTKA_PASSWORD, which other users cannot see in the process list"},
		{"ca-file", &s.CAFile, "PEM file of the CA that signed the brokers' certificates"},
		{"cert-file", &s.CertFile, "PEM file of the client certificate, for mTLS"},
		{"key-file", &s.KeyFile, "PEM file of the client certificate's key, for mTLS"},
	}
}
