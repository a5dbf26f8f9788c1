package server

import (
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// DescribeLogDirs v0-v4: this broker's one log directory (its data
// directory) with the size of every partition replica it hosts; v2
// flexible; v4 adds the file system's total and usable bytes.
//
// OffsetLag, a replica's log end beyond the high watermark, is always 0: a
// replica's log holds committed records only.
func init() { register(kmsg.DescribeLogDirs, 0, 4, handleDescribeLogDirs) }

func handleDescribeLogDirs(b *Broker, r *request) (kmsg.Response, error) {
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
	type hosted struct {
		topic string
		index int32
		shard uint64
	}
	var all []hosted
	b.meta.Read(func(s *meta.State) {
		for _, t := range s.Topics {
			for _, p := range t.Partitions {
				if containsID(p.Replicas, b.cfg.ID) && (req.Topics == nil || wanted[t.Name][p.Index]) {
					all = append(all, hosted{t.Name, p.Index, p.Shard})
				}
			}
		}
	})
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.cfg.DataDir
	var st syscall.Statfs_t
	if err := syscall.Statfs(b.cfg.DataDir, &st); err == nil {
		dir.TotalBytes, dir.UsableBytes = int64(st.Blocks*uint64(st.Bsize)), int64(st.Bavail*uint64(st.Bsize))
	}
	byTopic := map[string]int{}
	for _, h := range all {
		rep := b.replicas.get(h.shard)
		if rep == nil {
			continue // placed here but not started yet
		}
		i, ok := byTopic[h.topic]
		if !ok {
			i = len(dir.Topics)
			byTopic[h.topic] = i
			rt := kmsg.NewDescribeLogDirsResponseDirTopic()
			rt.Topic = h.topic
			dir.Topics = append(dir.Topics, rt)
		}
		rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		rp.Partition, rp.Size = h.index, rep.sm.Log().SizeBytes()
		dir.Topics[i].Partitions = append(dir.Topics[i].Partitions, rp)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp, nil
}
