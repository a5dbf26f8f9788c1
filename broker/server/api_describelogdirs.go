package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeLogDirs v0-v4: this broker's one log directory (its data
// directory) with the size of every partition replica it hosts; v2
// flexible; v4 adds the file system's total and usable bytes.
//
// OffsetLag, a replica's log end beyond the high watermark, is always 0: a
// replica's log holds committed records only.
func init() { register(kmsg.DescribeLogDirs, 0, 4, handleDescribeLogDirs) }

func handleDescribeLogDirs(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	wanted := map[string]map[int32]bool{} // nil Topics: every partition
	for _, t := range req.Topics {
		if wanted[t.Topic] == nil {
			wanted[t.Topic] = map[int32]bool{}
		}
		for _, p := range t.Partitions {
			wanted[t.Topic][p] = true
		}
	}
	all := srv.Meta.HostedPartitions(srv.cfg.ID, func(topic string, index int32) bool { return req.Topics == nil || wanted[topic][index] })
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = srv.cfg.DataDir
	if total, usable, err := srv.volumeBytes(); err == nil {
		dir.TotalBytes, dir.UsableBytes = total, usable
	}
	byTopic := map[string]int{}
	for _, h := range all {
		rep := srv.Replicas.Replica(h.Shard)
		if rep == nil {
			continue // placed here but not started yet
		}
		i, ok := byTopic[h.Topic]
		if !ok {
			i = len(dir.Topics)
			byTopic[h.Topic] = i
			rt := kmsg.NewDescribeLogDirsResponseDirTopic()
			rt.Topic = h.Topic
			dir.Topics = append(dir.Topics, rt)
		}
		rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		rp.Partition, rp.Size = h.Index, rep.StateMachine().Log().SizeBytes()
		dir.Topics[i].Partitions = append(dir.Topics[i].Partitions, rp)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp, nil
}
