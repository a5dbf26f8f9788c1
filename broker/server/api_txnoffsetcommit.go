package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// TxnOffsetCommit v0-v5: v3 flexible, with the group's generation and
// member (KIP-447), checked as OffsetCommit checks them, and
// PRODUCER_FENCED; v4 as v3; v5 (KIP-890 part 2) adds the group to the
// transaction itself, with no AddOffsetsToTxn before it, once the
// cluster's transaction.version is 2. The offsets wait in the
// transaction and are committed with it (meta/txn.go).
func init() { register(kmsg.TxnOffsetCommit, 0, 5, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	code := int16(0)
	if err := r.onTxn(srv, req.TransactionalID); err != nil {
		code = err.Code
	} else if err := r.onGroup(srv, kmsg.ACLOperationRead, req.Group); err != nil {
		code = err.Code
	} else if req.Version >= 3 && req.Generation >= 0 {
		// The group's members are checked as OffsetCommit checks them,
		// on a coordinator that caught up (coordinatorRefusal).
		if err := srv.coordinatorRefusal(); err != nil {
			code = err.Code
		} else if err := srv.Groups.ValidateCommit(req.Group, req.MemberID, req.InstanceID, req.Generation); err != nil {
			code = err.Code
		}
	}
	now := time.Now().UnixMilli()
	commit := &meta.TxnCommitOffsets{ID: req.TransactionalID, ProducerID: req.ProducerID, Epoch: req.ProducerEpoch, Group: req.Group,
		Offsets: map[string]map[int32]meta.GroupOffset{}, AddGroup: req.Version >= 5 && srv.transactionVersion() >= 2}
	if commit.AddGroup {
		commit.NowMs = now // only the transaction it may begin reads it
	}
	codes := map[string]map[int32]int16{}
	for _, t := range req.Topics {
		codes[t.Topic] = map[int32]int16{}
		denied := r.onTopic(srv, kmsg.ACLOperationRead, t.Topic)
		for _, p := range t.Partitions {
			switch {
			case code != 0:
				codes[t.Topic][p.Partition] = code
			case denied != nil:
				codes[t.Topic][p.Partition] = denied.Code
			default:
				if _, err := srv.partitionFor(t.Topic, p.Partition); err != nil {
					codes[t.Topic][p.Partition] = err.Code
					continue
				}
				addGroupOffset(commit.Offsets, t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, now)
			}
		}
	}
	all := int16(0)
	if len(commit.Offsets) > 0 {
		_, err := srv.proposeTxn(&meta.Command{TxnCommitOffsets: commit})
		all = txnErr(err, req.Version, 3)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			if c, ok := codes[t.Topic][p.Partition]; ok {
				rp.ErrorCode = c
			} else {
				rp.ErrorCode = all
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
