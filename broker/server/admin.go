package server

import (
	"context"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// proposeAdminChange proposes an administration command (ACLs, quotas) to
// the metadata group, within aclChangeWait.
func (srv *Server) proposeAdminChange(cmd *meta.Command) *kerr.Error {
	ctx, cancel := context.WithTimeout(srv.ctx, aclChangeWait)
	defer cancel()
	out, err := srv.Propose(ctx, cmd)
	if err == nil {
		err = out.Err
	}
	if err != nil {
		return kafkaerr.Of(err, kerr.RequestTimedOut)
	}
	return nil
}

// aclAPIAllowed is the check of the ACL APIs: the authorizer is on and
// the client may do op on the cluster.
func aclAPIAllowed(srv *Server, r *request, op kmsg.ACLOperation) *kerr.Error {
	if !srv.cfg.AuthorizerEnabled {
		return kerr.SecurityDisabled
	}
	return r.onCluster(srv, op)
}
