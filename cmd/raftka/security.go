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

// securityFlags are the global flags that set the settings.
func securityFlags(s *clientsecurity.Settings) map[string]*string {
	return map[string]*string{"security-protocol": &s.Protocol, "sasl-mechanism": &s.Mechanism, "username": &s.Username,
		"password": &s.Password, "ca-file": &s.CAFile, "cert-file": &s.CertFile, "key-file": &s.KeyFile}
}
