package latency

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/brokertest"
)

// profilesDir is where the benchmark leaves broker 0's CPU profiles
// (RAFTKA_BENCH_PROFILES), "" for none. The brokers then serve pprof.
func profilesDir() string { return os.Getenv("RAFTKA_BENCH_PROFILES") }

// profileFlags are the broker flags profiling needs.
func profileFlags() []string {
	if profilesDir() == "" {
		return nil
	}
	return []string{"--enable-pprof"}
}

// profileDuring takes, in the background, a CPU profile of broker 0 over
// the measurement of a load that starts now (after warm), and writes it
// to profilesDir as name-cpu.pb.gz; nothing when no directory is set.
func profileDuring(b *testing.B, c *brokertest.Cluster, name string, warm, measure time.Duration) {
	dir := profilesDir()
	if dir == "" {
		return
	}
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", c.Brokers[0].HTTPAddr, max(1, int(measure.Seconds())-1))
	go func() {
		time.Sleep(warm)
		resp, err := http.Get(url)
		if err != nil {
			b.Log(err)
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+"-cpu.pb.gz"), data, 0o644)
		}
		if err != nil {
			b.Log(err)
		}
	}()
}
