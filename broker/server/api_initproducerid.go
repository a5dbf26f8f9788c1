package server

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/acl"
	"github.com/raftka/raftka/broker/meta"
)

// InitProducerId v0-v4: v2 flexible; v3+ may bump the epoch of an
// existing producer id (KIP-360); v4 answers PRODUCER_FENCED. With a
// transactional id it goes to the transaction coordinator (txncoord.go).
func init() { register(kmsg.InitProducerID, 0, 4, handleInitProducerID) }

func handleInitProducerID(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		initTxnProducer(srv, r, req, resp)
		return resp, nil
	}
	if !srv.mayProduceIdempotently(r) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if req.ProducerID >= 0 && req.ProducerEpoch >= 0 {
		if req.ProducerEpoch == 1<<15-1 {
			resp.ErrorCode = kerr.InvalidProducerEpoch.Code
			return resp, nil
		}
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(srv.ctx, 10*time.Second)
	defer cancel()
	id, err := srv.pids.next(ctx, srv)
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

// producerIDs hands out ids from blocks allocated through the metadata
// group, so ids stay unique across brokers and restarts.
type producerIDs struct {
	mu          sync.Mutex
	nextID, end int64
}

func (p *producerIDs) next(ctx context.Context, srv *Server) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nextID == p.end {
		out, err := srv.Propose(ctx, &meta.Command{AllocateProducerIDs: true})
		if err != nil {
			return 0, err
		}
		p.nextID, p.end = out.ProducerID, out.ProducerID+meta.ProducerIDBlock
	}
	id := p.nextID
	p.nextID++
	return id, nil
}

// mayProduceIdempotently is Kafka's rule for a producer id without a
// transaction: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic.
func (srv *Server) mayProduceIdempotently(r *request) bool {
	if r.allowed(srv, kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, acl.ClusterName) {
		return true
	}
	found := false
	srv.Meta.Read(func(s *meta.State) {
		found = acl.AllowsAny(s.ACLs(), r.conn.principal(), r.conn.host(), kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic)
	})
	return found
}

// initTxnProducer gives a transactional id its producer, fencing the one
// before (meta/txn.go).
func initTxnProducer(srv *Server, r *request, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) {
	id := *req.TransactionalID
	switch {
	case id == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
		return
	case r.onTxn(srv, id) != nil:
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return
	case req.TransactionTimeoutMillis <= 0 || time.Duration(req.TransactionTimeoutMillis)*time.Millisecond > srv.txnMaxTimeout():
		resp.ErrorCode = kerr.InvalidTransactionTimeout.Code
		return
	}
	out, err := srv.proposeTxn(&meta.Command{InitTxnProducer: &meta.InitTxnProducer{ID: id, TimeoutMs: req.TransactionTimeoutMillis,
		ExpectedProducerID: req.ProducerID, ExpectedEpoch: req.ProducerEpoch, NowMs: time.Now().UnixMilli()}})
	if resp.ErrorCode = txnErr(err, req.Version, 4); resp.ErrorCode == 0 {
		resp.ProducerID, resp.ProducerEpoch = out.ProducerID, out.Epoch
	}
}
