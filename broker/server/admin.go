package server

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// proposeAdminChange proposes an administration command (ACLs, quotas) to
// the metadata group, within aclChangeWait.
func (b *Broker) proposeAdminChange(cmd *meta.Command) *kerr.Error {
	ctx, cancel := context.WithTimeout(b.ctx, aclChangeWait)
	defer cancel()
	out, err := b.proposeMeta(ctx, cmd)
	if err == nil {
		err = out.Err
	}
	if err != nil {
		return kafkaError(err, kerr.RequestTimedOut)
	}
	return nil
}

// aclAPIAllowed is the check of the ACL APIs: the authorizer is on and
// the client may do op on the cluster.
func aclAPIAllowed(b *Broker, r *request, op kmsg.ACLOperation) *kerr.Error {
	if !b.cfg.Authorizer.Enabled {
		return kerr.SecurityDisabled
	}
	return r.onCluster(b, op)
}
