package security

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/raftka/raftka/broker/meta"
)

// The server side of a SCRAM exchange (RFC 5802, RFC 7677) as Kafka's
// brokers run it. It is ours rather than a library's because Kafka's
// rule differs from the RFC in one place clients depend on: the nonce of
// the client's final message need only end with the nonce the server
// sent. librdkafka (kcat, confluent-kafka-*) sends its own nonce once more
// in front of it.

// scramHash is a SCRAM mechanism's hash function.
func scramHash(mechanism string) (func() hash.Hash, bool) {
	switch mechanism {
	case meta.ScramSHA256:
		return sha256.New, true
	case meta.ScramSHA512:
		return sha512.New, true
	}
	return nil, false
}

// scramExchange is one SCRAM exchange: two client messages, two answers.
type scramExchange struct {
	hash   func() hash.Hash
	lookup func(user string) meta.ScramCredential
	// Set by the client's first message.
	user, gs2Header, clientFirstBare, serverFirst, nonce string
	cred                                                 meta.ScramCredential
	done                                                 bool
}

var errScramProof = errors.New("invalid SCRAM proof")

// step takes the client's next message and returns the answer; done once
// the proof was checked.
func (x *scramExchange) step(msg string) (answer string, done bool, err error) {
	switch {
	case x.done:
		return "", false, errors.New("the SCRAM exchange is over")
	case x.nonce == "":
		return x.first(msg)
	default:
		x.done = true
		answer, err := x.final(msg)
		return answer, err == nil, err
	}
}

// first reads client-first-message = gs2-header client-first-message-bare,
// gs2-header = ("n" | "y") "," [ "a=" authzid ] ",", and answers
// server-first-message = "r=" nonce ",s=" salt ",i=" iterations.
func (x *scramExchange) first(msg string) (string, bool, error) {
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok || (flag != "n" && flag != "y") {
		return "", false, errors.New("SCRAM: channel binding is not offered; the GS2 flag must be n or y")
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok || (authz != "" && !strings.HasPrefix(authz, "a=")) {
		return "", false, errors.New("SCRAM: malformed GS2 header")
	}
	fields := strings.Split(bare, ",")
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "n=") || !strings.HasPrefix(fields[1], "r=") || len(fields[1]) < 3 {
		return "", false, errors.New("SCRAM: the first message must name the user and a nonce")
	}
	for _, ext := range fields[2:] {
		// Kafka's tokenauth extension asks for a delegation token, which
		// this broker does not issue.
		if strings.HasPrefix(ext, "tokenauth=") && ext != "tokenauth=false" {
			return "", false, errors.New("SCRAM: delegation tokens are not supported")
		}
	}
	user, err := scramName(fields[0][2:])
	if err != nil {
		return "", false, err
	}
	if authz != "" {
		if z, err := scramName(authz[2:]); err != nil || z != user {
			return "", false, errors.New("SCRAM: the authorization id differs from the user")
		}
	}
	serverNonce := make([]byte, 24)
	_, _ = rand.Read(serverNonce)
	x.user, x.gs2Header, x.clientFirstBare = user, flag+","+authz+",", bare
	x.cred = x.lookup(user)
	x.nonce = fields[1][2:] + base64.RawURLEncoding.EncodeToString(serverNonce)
	x.serverFirst = "r=" + x.nonce + ",s=" + base64.StdEncoding.EncodeToString(x.cred.Salt) + ",i=" + strconv.Itoa(int(x.cred.Iterations))
	return x.serverFirst, false, nil
}

// final reads client-final-message = "c=" base64(gs2-header) ",r=" nonce
// [extensions] ",p=" proof, checks the proof against the stored key, and
// answers server-final-message = "v=" server signature.
func (x *scramExchange) final(msg string) (string, error) {
	withoutProof, proofField, ok := cutLast(msg, ",")
	fields := strings.Split(withoutProof, ",")
	if !ok || len(fields) < 2 || !strings.HasPrefix(proofField, "p=") {
		return "", errors.New("SCRAM: malformed final message")
	}
	if fields[0] != "c="+base64.StdEncoding.EncodeToString([]byte(x.gs2Header)) {
		return "", errors.New("SCRAM: the channel binding differs from the GS2 header")
	}
	if !strings.HasPrefix(fields[1], "r=") || !strings.HasSuffix(fields[1][2:], x.nonce) {
		return "", errors.New("SCRAM: the final message's nonce is not the server's")
	}
	proof, err := base64.StdEncoding.DecodeString(proofField[2:])
	if err != nil {
		return "", fmt.Errorf("SCRAM: proof: %w", err)
	}
	authMessage := []byte(x.clientFirstBare + "," + x.serverFirst + "," + withoutProof)
	signature := hmacOf(x.hash, x.cred.StoredKey, authMessage)
	if len(proof) != len(signature) {
		return "", errScramProof
	}
	clientKey := make([]byte, len(proof))
	subtle.XORBytes(clientKey, proof, signature)
	h := x.hash()
	h.Write(clientKey)
	if !hmac.Equal(h.Sum(nil), x.cred.StoredKey) {
		return "", errScramProof
	}
	return "v=" + base64.StdEncoding.EncodeToString(hmacOf(x.hash, x.cred.ServerKey, authMessage)), nil
}

// scramName decodes a SCRAM saslname: "=2C" is a comma, "=3D" an equals
// sign, and no other "=" may appear.
func scramName(s string) (string, error) {
	if s == "" {
		return "", errors.New("SCRAM: empty user name")
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", errors.New("SCRAM: malformed user name")
		}
		i += 2
	}
	return b.String(), nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

func hmacOf(h func() hash.Hash, key, data []byte) []byte {
	m := hmac.New(h, key)
	m.Write(data)
	return m.Sum(nil)
}

// SaltedCredential derives what a broker keeps of a SCRAM credential from
// a salted password, as AlterUserScramCredentials carries it:
// StoredKey = H(HMAC(salted, "Client Key")), ServerKey = HMAC(salted,
// "Server Key") (RFC 5802).
func SaltedCredential(mechanism string, salt, salted []byte, iterations int32) meta.ScramCredential {
	h, _ := scramHash(mechanism)
	stored := h()
	stored.Write(hmacOf(h, salted, []byte("Client Key")))
	return meta.ScramCredential{Salt: append([]byte(nil), salt...), StoredKey: stored.Sum(nil),
		ServerKey: hmacOf(h, salted, []byte("Server Key")), Iterations: iterations}
}
