package server

import (
	"context"
	"slices"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/security"
)

// AlterUserScramCredentials v0 (flexible): sets and deletes users' SCRAM
// credentials (kafka-configs.sh --alter --add-config
// 'SCRAM-SHA-512=[password=...]'). The client sends the salt and the
// salted password; the metadata keeps only the keys derived from them
// (scramCredential). One result per user: a user with any change refused
// gets none of its changes applied.
func init() { register(kmsg.AlterUserSCRAMCredentials, 0, 0, handleAlterUserSCRAMCredentials) }

const alterScramWait = 10 * time.Second

func handleAlterUserSCRAMCredentials(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	denied := r.onCluster(srv, kmsg.ACLOperationAlter) // in the reader, as CreateAcls
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		changes, refused := scramChanges(srv, req)
		if denied != nil {
			changes = &meta.AlterScramCredentials{}
		}
		var users []string
		for _, d := range req.Deletions {
			if !slices.Contains(users, d.Name) {
				users = append(users, d.Name)
			}
		}
		for _, u := range req.Upsertions {
			if !slices.Contains(users, u.Name) {
				users = append(users, u.Name)
			}
		}
		var failed *kerr.Error
		if len(changes.Upserts)+len(changes.Deletions) > 0 {
			ctx, cancel := context.WithTimeout(srv.ctx, alterScramWait)
			out, err := srv.Propose(ctx, &meta.Command{AlterScramCredentials: changes})
			cancel()
			if err == nil {
				err = out.Err
			}
			if err != nil {
				failed = kafkaerr.Of(err, kerr.RequestTimedOut)
			}
		}
		for _, user := range users {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User = user
			if denied != nil {
				res.ErrorCode, res.ErrorMessage = denied.Code, kmsg.StringPtr(denied.Message)
			} else if e, ok := refused[user]; ok {
				res.ErrorCode, res.ErrorMessage = e.err.Code, kmsg.StringPtr(e.message)
			} else if failed != nil {
				res.ErrorCode = failed.Code
			}
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
	return nil, nil
}

type scramRefusal struct {
	err     *kerr.Error
	message string
}

// scramChanges checks each change of the request, as Kafka's controller
// does, and returns the changes of the users none of whose changes was
// refused, with the derived credentials.
func scramChanges(srv *Server, req *kmsg.AlterUserSCRAMCredentialsRequest) (*meta.AlterScramCredentials, map[string]scramRefusal) {
	refused := map[string]scramRefusal{}
	refuse := func(user string, err *kerr.Error, message string) {
		if _, ok := refused[user]; !ok {
			refused[user] = scramRefusal{err, message}
		}
	}
	type change struct{ user, mechanism string }
	seen := map[change]bool{}
	once := func(user, mechanism string) bool {
		c := change{user, mechanism}
		if seen[c] {
			refuse(user, kerr.DuplicateResource, "a user's credential for a mechanism may change once per request")
			return false
		}
		seen[c] = true
		return true
	}
	out := &meta.AlterScramCredentials{}
	var existing map[string]map[string]meta.ScramCredential
	srv.Meta.Read(func(s *meta.State) {
		existing = map[string]map[string]meta.ScramCredential{}
		for _, d := range req.Deletions {
			existing[d.Name] = s.ScramCredentialsOf(d.Name)
		}
	})
	for _, d := range req.Deletions {
		mechanism, ok := scramMechanismName(d.Mechanism)
		switch {
		case d.Name == "":
			refuse(d.Name, kerr.UnacceptableCredential, "the user name is empty")
		case !ok:
			refuse(d.Name, kerr.UnsupportedSaslMechanism, "unknown SCRAM mechanism")
		case !once(d.Name, mechanism):
		case existing[d.Name][mechanism].Iterations == 0:
			refuse(d.Name, kerr.ResourceNotFound, "the user has no "+mechanism+" credential to delete")
		default:
			out.Deletions = append(out.Deletions, meta.ScramDeletion{User: d.Name, Mechanism: mechanism})
		}
	}
	for _, u := range req.Upsertions {
		mechanism, ok := scramMechanismName(u.Mechanism)
		switch {
		case u.Name == "":
			refuse(u.Name, kerr.UnacceptableCredential, "the user name is empty")
		case !ok:
			refuse(u.Name, kerr.UnsupportedSaslMechanism, "unknown SCRAM mechanism")
		case !once(u.Name, mechanism):
		case u.Iterations < security.MinScramIterations:
			refuse(u.Name, kerr.UnacceptableCredential, "too few iterations: at least 4096")
		case u.Iterations > security.MaxScramIterations:
			refuse(u.Name, kerr.UnacceptableCredential, "too many iterations: at most 16384")
		case len(u.Salt) == 0 || len(u.SaltedPassword) == 0:
			refuse(u.Name, kerr.UnacceptableCredential, "the salt and the salted password must not be empty")
		default:
			out.Upserts = append(out.Upserts, meta.ScramUpsert{User: u.Name, Mechanism: mechanism,
				Credential: security.SaltedCredential(mechanism, u.Salt, u.SaltedPassword, u.Iterations)})
		}
	}
	out.Deletions = slices.DeleteFunc(out.Deletions, func(d meta.ScramDeletion) bool { _, no := refused[d.User]; return no })
	out.Upserts = slices.DeleteFunc(out.Upserts, func(u meta.ScramUpsert) bool { _, no := refused[u.User]; return no })
	return out, refused
}
