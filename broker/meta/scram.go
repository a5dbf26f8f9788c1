package meta

import (
	"maps"
	"slices"
)

// The SCRAM mechanisms, with the numbers Kafka's DescribeUserScramCredentials
// and AlterUserScramCredentials give them.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// ScramCredential is what a broker needs to check a SCRAM exchange
// (RFC 5802): never the password, nor the salted password, only the keys
// derived from it, so that the metadata alone does not let anyone
// authenticate.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// ScramUpsert sets one user's credential for one mechanism.
type ScramUpsert struct {
	User       string
	Mechanism  string
	Credential ScramCredential
}

// ScramDeletion removes one user's credential for one mechanism.
type ScramDeletion struct {
	User      string
	Mechanism string
}

// AlterScramCredentials changes users' SCRAM credentials (Kafka's
// AlterUserScramCredentials); the broker that proposes it checked each
// change, so every one applies, and deleting one already gone is no
// change.
type AlterScramCredentials struct {
	Upserts   []ScramUpsert   `json:",omitempty"`
	Deletions []ScramDeletion `json:",omitempty"`
}

func (s *State) alterScramCredentials(c *AlterScramCredentials) Outcome {
	for _, d := range c.Deletions {
		delete(s.scramCredentials[d.User], d.Mechanism)
		if len(s.scramCredentials[d.User]) == 0 {
			delete(s.scramCredentials, d.User)
		}
	}
	for _, u := range c.Upserts {
		if s.scramCredentials == nil {
			s.scramCredentials = map[string]map[string]ScramCredential{}
		}
		if s.scramCredentials[u.User] == nil {
			s.scramCredentials[u.User] = map[string]ScramCredential{}
		}
		s.scramCredentials[u.User][u.Mechanism] = u.Credential
	}
	return Outcome{}
}

// ScramUsers returns the users with a SCRAM credential, sorted.
func (s *State) ScramUsers() []string { return slices.Sorted(maps.Keys(s.scramCredentials)) }
