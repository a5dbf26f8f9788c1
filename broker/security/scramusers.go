package security

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/raftka/raftka/broker/meta"
)

// scramUsersInterval is how often the users directory is read again: a
// rotated Secret reaches the metadata within it.
const scramUsersInterval = 10 * time.Second

// scramUsersWait bounds the wait for the metadata to take a change.
const scramUsersWait = 10 * time.Second

// scramUsersIterations is the iteration count of the credentials derived
// from the users directory, Kafka's default for SCRAM.
const scramUsersIterations = 4096

// ScramUsers keeps the SCRAM-SHA-512 credentials of the users a directory
// names (--scram-users-dir) in step with the passwords in it: one file per
// user, named after it and holding its password, as a mounted Kubernetes
// Secret lays them out. It is how the operator's own credential reaches a
// cluster that no one can alter yet without one. A credential that no
// longer matches its file (deleted, or changed with
// AlterUserScramCredentials) is set again; the directory wins.
type ScramUsers struct {
	// Dir is the users directory.
	Dir string
	// Credentials are the credentials the metadata holds.
	Credentials Credentials
	// Propose proposes a metadata command and waits for its outcome.
	Propose func(ctx context.Context, cmd *meta.Command) (meta.Outcome, error)
	Log     *slog.Logger
}

// Run keeps the credentials in step with the directory until ctx ends.
func (u ScramUsers) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wait := scramUsersInterval
		if err := u.sync(ctx); err != nil {
			// Soon again: at start, the metadata group may not have
			// elected its leader yet, and the brokers wait for these
			// credentials to reach each other.
			u.Log.Warn("SCRAM users directory not applied", "dir", u.Dir, "error", err)
			wait = time.Second
		}
		t.Reset(wait)
	}
}

// sync sets the credential of every user whose file's password does not
// match it.
func (u ScramUsers) sync(ctx context.Context) error {
	passwords, err := ReadScramUsers(u.Dir)
	if err != nil {
		return err
	}
	change := &meta.AlterScramCredentials{}
	for user, password := range passwords {
		stored, found := u.Credentials.ScramCredential(user, meta.ScramSHA512)
		if found && ScramPasswordMatches(meta.ScramSHA512, stored, password) {
			continue
		}
		cred, err := deriveScramCredential(meta.ScramSHA512, password)
		if err != nil {
			return err
		}
		change.Upserts = append(change.Upserts, meta.ScramUpsert{User: user, Mechanism: meta.ScramSHA512, Credential: cred})
	}
	if len(change.Upserts) == 0 {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, scramUsersWait)
	defer cancel()
	out, err := u.Propose(pctx, &meta.Command{AlterScramCredentials: change})
	if err == nil {
		err = out.Err
	}
	if err != nil {
		return err
	}
	for _, up := range change.Upserts {
		u.Log.Info("SCRAM credential set from the users directory", "user", up.User, "mechanism", up.Mechanism)
	}
	return nil
}

// ReadScramUsers reads the directory's user files. Names starting with a
// dot are skipped: a mounted Secret keeps its versions there.
func ReadScramUsers(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		if info, err := os.Stat(path); err != nil || info.IsDir() {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		password := strings.TrimRight(string(data), "\r\n")
		if password == "" {
			return nil, fmt.Errorf("user %s: the password file %s is empty", name, path)
		}
		out[name] = password
	}
	return out, nil
}

// deriveScramCredential salts a password afresh, as a client of
// AlterUserScramCredentials does.
func deriveScramCredential(mechanism, password string) (meta.ScramCredential, error) {
	h, ok := scramHash(mechanism)
	if !ok {
		return meta.ScramCredential{}, fmt.Errorf("unknown SCRAM mechanism %s", mechanism)
	}
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return meta.ScramCredential{}, err
	}
	salted, err := pbkdf2.Key(h, password, salt, scramUsersIterations, h().Size())
	if err != nil {
		return meta.ScramCredential{}, err
	}
	return SaltedCredential(mechanism, salt, salted, scramUsersIterations), nil
}

// ScramPasswordMatches tells whether a password is the one a credential
// was derived from.
func ScramPasswordMatches(mechanism string, stored meta.ScramCredential, password string) bool {
	h, ok := scramHash(mechanism)
	if !ok {
		return false
	}
	salted, err := pbkdf2.Key(h, password, stored.Salt, int(stored.Iterations), h().Size())
	if err != nil {
		return false
	}
	return hmac.Equal(SaltedCredential(mechanism, stored.Salt, salted, stored.Iterations).StoredKey, stored.StoredKey)
}
