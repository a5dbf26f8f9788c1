package security

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"hash"
	"net"
	"strings"
	"testing"
	"time"

	sm "github.com/lni/dragonboat/v3/statemachine"
	"github.com/xdg-go/scram"

	"github.com/raftka/raftka/broker/meta"
)

// clients are xdg-go's SCRAM clients, an implementation other than the
// broker's.
var clients = map[string]scram.HashGeneratorFcn{meta.ScramSHA256: scram.SHA256, meta.ScramSHA512: scram.SHA512}

// authWithUser is an authenticator whose metadata holds alice's
// credentials for both SCRAM mechanisms, set as AlterUserScramCredentials
// sets them: from a salted password.
func authWithUser(t testing.TB, cfg SASLConfig) *Authenticator {
	m := meta.NewStateMachine()
	alter := &meta.AlterScramCredentials{}
	for _, mechanism := range []string{meta.ScramSHA256, meta.ScramSHA512} {
		h := sha256.New
		if mechanism == meta.ScramSHA512 {
			h = sha512.New
		}
		salt := []byte("pepper-" + mechanism)
		salted, err := pbkdf2.Key(h, "wonderland", salt, 4096, h().Size())
		if err != nil {
			t.Fatal(err)
		}
		alter.Upserts = append(alter.Upserts, meta.ScramUpsert{User: "alice", Mechanism: mechanism, Credential: SaltedCredential(mechanism, salt, salted, 4096)})
	}
	if _, err := m.Update([]sm.Entry{{Index: 1, Cmd: (&meta.Command{AlterScramCredentials: alter}).Encode()}}); err != nil {
		t.Fatal(err)
	}
	return NewAuthenticator(cfg, m, nil)
}

func newTestSession(a *Authenticator) *Session {
	client, server := net.Pipe()
	_ = client.Close()
	return a.NewSession(server)
}

// scramLogin runs a SCRAM exchange of a real client (xdg-go's) against a
// session and returns the step at which the server refused, 0 if none.
func scramLogin(t *testing.T, s *Session, mechanism, user, password string) (refusedAt int) {
	t.Helper()
	if err := s.Begin(mechanism, false); err != nil {
		t.Fatal(err)
	}
	client, err := clients[mechanism].NewClient(user, password, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	msg, err := conv.Step("")
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; ; step++ {
		answer, done, err := s.Step([]byte(msg), time.Now())
		if err != nil {
			return step
		}
		if msg, err = conv.Step(string(answer)); err != nil {
			t.Fatalf("the client refused the server's answer at step %d: %v", step, err)
		}
		if done {
			if !conv.Valid() {
				t.Fatal("the client could not verify the server's signature")
			}
			return 0
		}
	}
}

func TestScramExchanges(t *testing.T) {
	a := authWithUser(t, SASLConfig{SessionLifetime: time.Minute})
	for _, mechanism := range []string{meta.ScramSHA256, meta.ScramSHA512} {
		s := newTestSession(a)
		if s.Admits(3, time.Now()) {
			t.Fatal("Metadata admitted before authentication")
		}
		if step := scramLogin(t, s, mechanism, "alice", "wonderland"); step != 0 {
			t.Fatalf("%s: the right password was refused at step %d", mechanism, step)
		}
		if s.principal != "alice" || !s.Admits(3, time.Now()) {
			t.Fatalf("%s: authenticated as %q, admits Metadata: %v", mechanism, s.principal, s.Admits(3, time.Now()))
		}
		if s.Admits(3, time.Now().Add(2*time.Minute)) {
			t.Fatalf("%s: Metadata admitted after the session ended", mechanism)
		}
		if step := scramLogin(t, s, mechanism, "alice", "wonderland"); step != 0 {
			t.Fatalf("%s: re-authentication refused at step %d", mechanism, step)
		}
		// An unknown user and a wrong password fail alike: at the proof,
		// the second message, so the first answer tells nothing.
		if step := scramLogin(t, newTestSession(a), mechanism, "alice", "looking-glass"); step != 2 {
			t.Fatalf("%s: a wrong password was refused at step %d, want 2", mechanism, step)
		}
		if step := scramLogin(t, newTestSession(a), mechanism, "mallory", "wonderland"); step != 2 {
			t.Fatalf("%s: an unknown user was refused at step %d, want 2", mechanism, step)
		}
	}
}

func TestReauthenticationKeepsThePrincipal(t *testing.T) {
	a := authWithUser(t, SASLConfig{})
	s := newTestSession(a)
	if step := scramLogin(t, s, meta.ScramSHA512, "alice", "wonderland"); step != 0 {
		t.Fatalf("refused at step %d", step)
	}
	s.principal = "bob" // as if bob had logged in first
	if step := scramLogin(t, s, meta.ScramSHA512, "alice", "wonderland"); step == 0 {
		t.Fatal("a re-authentication changed the connection's user")
	}
}

func TestPlainChecksTheScramCredential(t *testing.T) {
	a := authWithUser(t, SASLConfig{PlainWithoutTLS: true})
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{"\x00alice\x00wonderland", true},
		{"alice\x00alice\x00wonderland", true},
		{"\x00alice\x00looking-glass", false},
		{"\x00mallory\x00wonderland", false},
		{"bob\x00alice\x00wonderland", false},
		{"\x00alice", false},
		{"\x00\x00wonderland", false},
	} {
		s := newTestSession(a)
		if err := s.Begin(mechanismPlain, false); err != nil {
			t.Fatal(err)
		}
		_, done, err := s.Step([]byte(tc.msg), time.Now())
		if got := err == nil && done; got != tc.want {
			t.Errorf("PLAIN %q: authenticated %v, want %v (%v)", tc.msg, got, tc.want, err)
		}
	}
}

func TestScramCredentialMatchesTheRFC(t *testing.T) {
	// What a client derives from the password (xdg-go) must equal what the
	// broker derives from the salted password AlterUserScramCredentials
	// carries.
	for mechanism, h := range map[string]func() hash.Hash{meta.ScramSHA256: sha256.New, meta.ScramSHA512: sha512.New} {
		salted, err := pbkdf2.Key(h, "pw", []byte("salt"), 4096, h().Size())
		if err != nil {
			t.Fatal(err)
		}
		got := SaltedCredential(mechanism, []byte("salt"), salted, 4096)
		client, _ := clients[mechanism].NewClient("u", "pw", "")
		want, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: "salt", Iters: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if string(got.StoredKey) != string(want.StoredKey) || string(got.ServerKey) != string(want.ServerKey) {
			t.Errorf("%s: derived keys differ from a client's", mechanism)
		}
	}
}

// FuzzSASLExchange: no message sequence makes an exchange panic, and none
// but a valid one authenticates.
func FuzzSASLExchange(f *testing.F) {
	f.Add(uint8(0), []byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add(uint8(1), []byte("n,a=bob,n=alice,r=x"), []byte("c=,r=,p="))
	f.Add(uint8(2), []byte("\x00alice\x00guess"), []byte{})
	f.Add(uint8(0), []byte(",,,"), []byte{})
	f.Add(uint8(1), []byte("y,a=,n=a=2Cb,r=r,tokenauth=true"), []byte("c=eSws,r=rr,x=1,p=="))
	a := authWithUser(f, SASLConfig{PlainWithoutTLS: true})
	mechanisms := []string{meta.ScramSHA256, meta.ScramSHA512, mechanismPlain}
	f.Fuzz(func(t *testing.T, m uint8, first, second []byte) {
		s := newTestSession(a)
		if err := s.Begin(mechanisms[int(m)%len(mechanisms)], false); err != nil {
			t.Fatal(err)
		}
		for _, msg := range [][]byte{first, second} {
			if _, _, err := s.Step(msg, time.Now()); err != nil {
				break
			}
		}
		if s.principal != "" {
			t.Fatalf("fuzzed messages authenticated as %q", s.principal)
		}
	})
}

// librdkafka's final message names its own nonce, then the server's (the
// whole of it, which starts with the client's own again); Kafka's brokers
// accept a nonce that ends with theirs, and so does this one.
func TestScramAcceptsLibrdkafkasNonce(t *testing.T) {
	a := authWithUser(t, SASLConfig{})
	s := newTestSession(a)
	if err := s.Begin(meta.ScramSHA256, false); err != nil {
		t.Fatal(err)
	}
	client, _ := clients[meta.ScramSHA256].NewClient("alice", "wonderland", "")
	conv := client.WithNonceGenerator(func() string { return "cnonce" }).NewConversation()
	first, _ := conv.Step("")
	serverFirst, _, err := s.Step([]byte(first), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	final, err := conv.Step(string(serverFirst))
	if err != nil {
		t.Fatal(err)
	}
	// Redo the client's proof over the final message as librdkafka
	// writes it: its nonce in front of the server's.
	doubled := strings.Replace(final, ",r=", ",r=cnonce", 1)
	withoutProof := doubled[:strings.LastIndex(doubled, ",p=")]
	salted, _ := pbkdf2.Key(sha256.New, "wonderland", []byte("pepper-"+meta.ScramSHA256), 4096, 32)
	clientKey := hmacOf(sha256.New, salted, []byte("Client Key"))
	stored := sha256.Sum256(clientKey)
	signature := hmacOf(sha256.New, stored[:], []byte(first[3:]+","+string(serverFirst)+","+withoutProof))
	proof := make([]byte, len(clientKey))
	for i := range proof {
		proof[i] = clientKey[i] ^ signature[i]
	}
	if _, done, err := s.Step([]byte(withoutProof+",p="+base64.StdEncoding.EncodeToString(proof)), time.Now()); err != nil || !done {
		t.Fatalf("librdkafka's final message: done %v, %v", done, err)
	}
	if s.principal != "alice" {
		t.Fatalf("authenticated as %q", s.principal)
	}
}

// TestExchangesCatchUpWithTheMetadata: a user that the metadata group
// acknowledged, but this broker's replica has not applied yet, logs in,
// because the exchange first catches up; without the catch-up (the
// guarantee off) the same login is refused, as one was in CI when a client
// connected right after AlterUserScramCredentials.
func TestExchangesCatchUpWithTheMetadata(t *testing.T) {
	behind := func() (*Authenticator, *int) {
		applied := authWithUser(t, SASLConfig{}).creds // the committed state, with alice
		lagging := meta.NewStateMachine()              // this broker's replica, before it
		var current Credentials = lagging
		catchUps := 0
		a := NewAuthenticator(SASLConfig{}, credentialsFunc(func(user, mechanism string) (meta.ScramCredential, bool) {
			return current.ScramCredential(user, mechanism)
		}), func(context.Context) error { catchUps++; current = applied; return nil })
		return a, &catchUps
	}
	for _, mechanism := range []string{meta.ScramSHA256, meta.ScramSHA512} {
		a, catchUps := behind()
		if step := scramLogin(t, newTestSession(a), mechanism, "alice", "wonderland"); step != 0 || *catchUps != 1 {
			t.Fatalf("%s: refused at step %d after %d catch-ups", mechanism, step, *catchUps)
		}
		a, _ = behind()
		a.catchUp = nil
		if step := scramLogin(t, newTestSession(a), mechanism, "alice", "wonderland"); step != 2 {
			t.Fatalf("%s: without the catch-up a lagging replica refused at step %d, want 2", mechanism, step)
		}
	}
	a, catchUps := behind()
	s := newTestSession(a)
	if err := s.Begin(mechanismPlain, false); err != nil {
		t.Fatal(err)
	}
	if _, done, err := s.Step([]byte("\x00alice\x00wonderland"), time.Now()); !done || err != nil || *catchUps != 1 {
		t.Fatalf("PLAIN on a lagging replica: done %v, %v, %d catch-ups", done, err, *catchUps)
	}
}

type credentialsFunc func(user, mechanism string) (meta.ScramCredential, bool)

func (f credentialsFunc) ScramCredential(user, mechanism string) (meta.ScramCredential, bool) {
	return f(user, mechanism)
}
