package clientsecurity

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

// Settings are Kafka's client security settings: security.protocol,
// sasl.mechanism, the SASL user and password, and the PEM files of the
// CA to trust and of the client's certificate and key.
type Settings struct {
	Protocol, Mechanism, Username, Password string
	CAFile, CertFile, KeyFile               string
}

// ClientOpts are the franz-go options for the settings. An unset protocol
// is inferred: SASL when a mechanism or user is given, TLS when a CA or
// certificate file is.
func (s Settings) ClientOpts() ([]kgo.Opt, error) {
	protocol := strings.ToUpper(s.Protocol)
	if protocol == "" {
		protocol = "PLAINTEXT"
		if s.Mechanism != "" || s.Username != "" {
			protocol = "SASL_PLAINTEXT"
		}
		if s.CAFile != "" || s.CertFile != "" {
			protocol = strings.Replace(protocol, "PLAINTEXT", "SSL", 1)
		}
	}
	var opts []kgo.Opt
	switch protocol {
	case "PLAINTEXT", "SASL_PLAINTEXT":
	case "SSL", "SASL_SSL":
		cfg, err := s.TLSConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	default:
		return nil, fmt.Errorf("security protocol %s: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", s.Protocol)
	}
	if !strings.HasPrefix(protocol, "SASL_") {
		return opts, nil
	}
	if s.Username == "" {
		return nil, fmt.Errorf("security protocol %s needs a user name and a password", protocol)
	}
	switch strings.ToUpper(s.Mechanism) {
	case "", "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()))
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()))
	default:
		return nil, fmt.Errorf("SASL mechanism %s: want SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN", s.Mechanism)
	}
	return opts, nil
}

// TLSConfig trusts the CA file (or the system's roots) and presents the
// client certificate, if any.
func (s Settings) TLSConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", s.CAFile)
		}
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return nil, fmt.Errorf("a client certificate file and its key file go together")
	}
	if s.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
