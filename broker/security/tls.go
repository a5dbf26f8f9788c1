package security

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// TLSConfig is the TLS of SSL and SASL_SSL listeners, from PEM files.
type TLSConfig struct {
	CertFile, KeyFile string
	// CAFile holds the certificates that sign client certificates; needed
	// when ClientAuth asks for them.
	CAFile string
	// ClientAuth (Kafka's ssl.client.auth) is "none", "requested" or
	// "required": whether SSL listeners ask clients for a certificate,
	// whose subject is then the connection's principal.
	ClientAuth string
	// ListenerClientAuth: ClientAuth was set for this listener alone
	// (Kafka's listener.name.NAME.ssl.client.auth). Only then does a
	// SASL_SSL listener ask for certificates too (KIP-684): a client then
	// needs both, and its principal stays its SASL user.
	ListenerClientAuth bool
}

// tlsReloadInterval bounds how often the PEM files are read again: a
// rotated Secret (cert-manager, a mounted Kubernetes Secret) is served
// to new connections within it, with no restart.
const tlsReloadInterval = time.Second

// Files serve the certificate, key and client CAs in the PEM files,
// reading them again when they change.
type Files struct {
	cfg TLSConfig
	log *slog.Logger

	mu        sync.Mutex
	checked   time.Time
	certPEM   []byte
	keyPEM    []byte
	caPEM     []byte
	cert      *tls.Certificate
	clientCAs *x509.CertPool
}

// NewFiles reads the files once, so that a broker with a missing or
// broken certificate does not start.
func NewFiles(cfg TLSConfig, log *slog.Logger) (*Files, error) {
	switch cfg.ClientAuth {
	case "", "none", "requested", "required":
	default:
		return nil, fmt.Errorf("TLS client auth %q: want none, requested or required", cfg.ClientAuth)
	}
	if cfg.CertFile == "" || cfg.KeyFile == "" {
		return nil, fmt.Errorf("SSL and SASL_SSL listeners need a certificate and a key file")
	}
	if (cfg.ClientAuth == "requested" || cfg.ClientAuth == "required") && cfg.CAFile == "" {
		return nil, fmt.Errorf("TLS client auth %s needs a CA file to check client certificates", cfg.ClientAuth)
	}
	f := &Files{cfg: cfg, log: log}
	if err := f.reload(); err != nil {
		return nil, err
	}
	f.checked = time.Now()
	return f, nil
}

// reload reads the files and, if they changed, parses them; on an error
// the certificate served so far stays.
func (f *Files) reload() error {
	certPEM, err := os.ReadFile(f.cfg.CertFile)
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(f.cfg.KeyFile)
	if err != nil {
		return err
	}
	var caPEM []byte
	if f.cfg.CAFile != "" {
		if caPEM, err = os.ReadFile(f.cfg.CAFile); err != nil {
			return err
		}
	}
	if f.cert != nil && bytes.Equal(certPEM, f.certPEM) && bytes.Equal(keyPEM, f.keyPEM) && bytes.Equal(caPEM, f.caPEM) {
		return nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("TLS certificate %s and key %s: %w", f.cfg.CertFile, f.cfg.KeyFile, err)
	}
	var pool *x509.CertPool
	if caPEM != nil {
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return fmt.Errorf("TLS CA file %s holds no PEM certificate", f.cfg.CAFile)
		}
	}
	if f.cert != nil {
		f.log.Info("TLS certificate reloaded", "file", f.cfg.CertFile)
	}
	f.certPEM, f.keyPEM, f.caPEM, f.cert, f.clientCAs = certPEM, keyPEM, caPEM, &cert, pool
	return nil
}

// Current returns the certificate and client CAs, read again from the
// files at most once per tlsReloadInterval.
func (f *Files) Current() (*tls.Certificate, *x509.CertPool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := time.Now(); now.Sub(f.checked) >= tlsReloadInterval {
		f.checked = now
		if err := f.reload(); err != nil {
			f.log.Warn("TLS files could not be read again; serving the certificate read before", "error", err)
		}
	}
	return f.cert, f.clientCAs
}

// ServerConfig is the TLS configuration of a listener.
func (f *Files) ServerConfig(l Listener) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, cas := f.Current()
			c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}}
			if l.Protocol == SSL || l.Protocol == SASLSSL && f.cfg.ListenerClientAuth {
				switch f.cfg.ClientAuth {
				case "requested":
					c.ClientAuth, c.ClientCAs = tls.VerifyClientCertIfGiven, cas
				case "required":
					c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, cas
				}
			}
			return c, nil
		},
	}
}

// Principal is the principal of a TLS connection with a verified
// client certificate, as Kafka names it: the certificate's subject
// ("CN=carol,OU=..."); ANONYMOUS without one.
func Principal(cs tls.ConnectionState) string {
	if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return "ANONYMOUS"
	}
	return cs.PeerCertificates[0].Subject.String()
}

// RaftTLS is the Raft transport's mutual TLS, from PEM files; Dragonboat
// reads the server's once, at start, and a client's at each connection.
// The brokers' HTTP calls to each other use the same files.
type RaftTLS struct {
	CAFile, CertFile, KeyFile string
}
