package server

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/raftka/raftka/broker/meta"
)

// scramUsersInterval is how often the users directory is read again: a
// rotated Secret reaches the metadata within it.
const scramUsersInterval = 10 * time.Second

// scramUsersIterations is the iteration count of the credentials derived
// from the users directory, Kafka's default for SCRAM.
const scramUsersIterations = 4096

// scramUsers keeps the SCRAM-SHA-512 credentials of the users a directory
// names (--scram-users-dir) in step with the passwords in it: one file per
// user, named after it and holding its password, as a mounted Kubernetes
// Secret lays them out. It is how the operator's own credential reaches a
// cluster that no one can alter yet without one. A credential that no
// longer matches its file (deleted, or changed with
// AlterUserScramCredentials) is set again; the directory wins.
type scramUsers struct {
	b   *Broker
	dir string
}

func (u scramUsers) run(ctx context.Context) {
	for {
		wait := scramUsersInterval
		if err := u.sync(ctx); err != nil {
			// Soon again: at start, the metadata group may not have
			// elected its leader yet, and the brokers wait for these
			// credentials to reach each other.
			u.b.log.Warn("SCRAM users directory not applied", "dir", u.dir, "error", err)
			wait = time.Second
		}
		if !sleep(ctx, wait) {
			return
		}
	}
}

// sync sets the credential of every user whose file's password does not
// match it.
func (u scramUsers) sync(ctx context.Context) error {
	passwords, err := readScramUsers(u.dir)
	if err != nil {
		return err
	}
	change := &meta.AlterScramCredentials{}
	for user, password := range passwords {
		var stored meta.ScramCredential
		var found bool
		u.b.meta.Read(func(s *meta.State) { stored, found = s.ScramCredential(user, meta.ScramSHA512) })
		if found && scramPasswordMatches(meta.ScramSHA512, stored, password) {
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
	pctx, cancel := context.WithTimeout(ctx, alterScramWait)
	defer cancel()
	out, err := u.b.proposeMeta(pctx, &meta.Command{AlterScramCredentials: change})
	if err == nil {
		err = out.Err
	}
	if err != nil {
		return err
	}
	for _, up := range change.Upserts {
		u.b.log.Info("SCRAM credential set from the users directory", "user", up.User, "mechanism", up.Mechanism)
	}
	return nil
}

// readScramUsers reads the directory's user files. Names starting with a
// dot are skipped: a mounted Secret keeps its versions there.
func readScramUsers(dir string) (map[string]string, error) {
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
	return scramCredential(mechanism, salt, salted, scramUsersIterations), nil
}

// scramPasswordMatches tells whether a password is the one a credential
// was derived from.
func scramPasswordMatches(mechanism string, stored meta.ScramCredential, password string) bool {
	h, ok := scramHash(mechanism)
	if !ok {
		return false
	}
	salted, err := pbkdf2.Key(h, password, stored.Salt, int(stored.Iterations), h().Size())
	if err != nil {
		return false
	}
	return hmac.Equal(scramCredential(mechanism, stored.Salt, salted, stored.Iterations).StoredKey, stored.StoredKey)
}
