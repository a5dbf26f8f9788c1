package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// security is how the command connects to a listener that is not
// PLAINTEXT, with Kafka's client names: the security protocol, the SASL
// mechanism and credentials, and the TLS files.
type security struct {
	protocol, mechanism, username, password string
	caFile, certFile, keyFile               string
}

// securityFromEnv reads the settings' environment variables, which the
// global flags override.
func securityFromEnv() *security {
	return &security{protocol: os.Getenv("RAFTKA_SECURITY_PROTOCOL"), mechanism: os.Getenv("RAFTKA_SASL_MECHANISM"),
		username: os.Getenv("RAFTKA_USERNAME"), password: os.Getenv("RAFTKA_PASSWORD"),
		caFile: os.Getenv("RAFTKA_CA_FILE"), certFile: os.Getenv("RAFTKA_CERT_FILE"), keyFile: os.Getenv("RAFTKA_KEY_FILE")}
}

// flags are the global flags that set it.
func (s *security) flags() map[string]*string {
	return map[string]*string{"security-protocol": &s.protocol, "sasl-mechanism": &s.mechanism, "username": &s.username,
		"password": &s.password, "ca-file": &s.caFile, "cert-file": &s.certFile, "key-file": &s.keyFile}
}

// clientOpts are the franz-go options for the settings.
func (s *security) clientOpts() ([]kgo.Opt, error) {
	protocol := strings.ToUpper(s.protocol)
	if protocol == "" {
		protocol = "PLAINTEXT"
		if s.mechanism != "" || s.username != "" {
			protocol = "SASL_PLAINTEXT"
		}
		if s.caFile != "" || s.certFile != "" {
			protocol = strings.Replace(protocol, "PLAINTEXT", "SSL", 1)
		}
	}
	var opts []kgo.Opt
	switch protocol {
	case "PLAINTEXT", "SASL_PLAINTEXT":
	case "SSL", "SASL_SSL":
		cfg, err := s.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	default:
		return nil, usagef("--security-protocol %s: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", s.protocol)
	}
	if !strings.HasPrefix(protocol, "SASL_") {
		return opts, nil
	}
	if s.username == "" {
		return nil, usagef("--security-protocol %s needs --username and a password ($RAFTKA_PASSWORD or --password)", protocol)
	}
	mechanism := strings.ToUpper(s.mechanism)
	switch mechanism {
	case "", "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: s.username, Pass: s.password}.AsSha512Mechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: s.username, Pass: s.password}.AsSha256Mechanism()))
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: s.username, Pass: s.password}.AsMechanism()))
	default:
		return nil, usagef("--sasl-mechanism %s: want SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN", s.mechanism)
	}
	return opts, nil
}

// tlsConfig trusts the CA file (or the system's roots) and presents the
// client certificate, if any.
func (s *security) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.caFile != "" {
		pem, err := os.ReadFile(s.caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", s.caFile)
		}
	}
	if (s.certFile == "") != (s.keyFile == "") {
		return nil, usagef("--cert-file and --key-file go together")
	}
	if s.certFile != "" {
		cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
