package certs

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"

	"software.sslmate.com/src/go-pkcs12"
)

// Store is a PKCS#12 store and the password that opens it, as a Secret
// holds them side by side: what a Java client takes as
// ssl.keystore.location or ssl.truststore.location with type PKCS12
// (Kafka's tools, and clients older than PEM stores). Its algorithms are
// PBES2 with AES-256 and an HMAC-SHA-256 MAC, which Java reads since
// 11.0.12.
type Store struct {
	Data     []byte
	Password string
}

// EnsureKeyStore returns current where it opens with its password and
// holds pair's certificate, else a new key store of pair with the chain
// up to caCert, under current's password or a new random one. Kept, a
// store's bytes do not change at each reconcile (its salts are random).
func EnsureKeyStore(current Store, pair Pair, caCert []byte) (Store, error) {
	cert, key, err := parse(pair)
	if err != nil {
		return Store{}, err
	}
	if current.Password != "" {
		if _, have, _, err := pkcs12.DecodeChain(current.Data, current.Password); err == nil && bytes.Equal(have.Raw, cert.Raw) {
			return current, nil
		}
	}
	ca, err := parseCertificate(caCert)
	if err != nil {
		return Store{}, err
	}
	password := passwordOf(current)
	data, err := pkcs12.Modern2023.Encode(key, cert, []*x509.Certificate{ca}, password)
	return Store{Data: data, Password: password}, err
}

// EnsureTrustStore returns current where it opens with its password and
// holds caCert alone, else a new trust store of caCert, under current's
// password or a new random one.
func EnsureTrustStore(current Store, caCert []byte) (Store, error) {
	ca, err := parseCertificate(caCert)
	if err != nil {
		return Store{}, err
	}
	if current.Password != "" {
		if have, err := pkcs12.DecodeTrustStore(current.Data, current.Password); err == nil && len(have) == 1 && bytes.Equal(have[0].Raw, ca.Raw) {
			return current, nil
		}
	}
	password := passwordOf(current)
	data, err := pkcs12.Modern2023.EncodeTrustStore([]*x509.Certificate{ca}, password)
	return Store{Data: data, Password: password}, err
}

// passwordOf keeps a store's password, so that a client configured with
// it keeps opening the store made again; a new one is 130 random bits.
func passwordOf(current Store) string {
	if current.Password != "" {
		return current.Password
	}
	return rand.Text()
}

func parseCertificate(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, errors.New("not a PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}
