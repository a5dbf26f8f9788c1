package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/raftka/raftka/broker/brokertest"
)

// profilesDir is where the benchmarks leave the brokers' profiles
// (RAFTKA_BENCH_PROFILES), "" for none. The brokers then serve pprof.
func profilesDir() string { return os.Getenv("RAFTKA_BENCH_PROFILES") }

// profileFlags are the broker flags profiling needs.
func profileFlags() []string {
	if profilesDir() == "" {
		return nil
	}
	return []string{"--enable-pprof"}
}

// saveProfiles writes broker i's heap profile, and a CPU profile of
// seconds, to profilesDir as name-heap.pb.gz and name-cpu.pb.gz, for
// `go tool pprof`; nothing when no directory is set.
func saveProfiles(b *testing.B, c *brokertest.Cluster, i int, name string, seconds int) {
	saveProfile(b, c, i, name, "heap", 0)
	saveProfile(b, c, i, name, "cpu", seconds)
}

// saveProfile writes one profile of broker i, kind heap or cpu (over
// seconds), to profilesDir as name-kind.pb.gz.
func saveProfile(b *testing.B, c *brokertest.Cluster, i int, name, kind string, seconds int) {
	dir := profilesDir()
	if dir == "" {
		return
	}
	path := "/debug/pprof/heap"
	if kind == "cpu" {
		path = fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds)
	}
	resp, err := http.Get("http://" + c.Brokers[i].HTTPAddr + path)
	if err != nil {
		b.Error(err)
		return
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Errorf("%s profile of broker %d: %v %s", kind, i, err, resp.Status)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+"-"+kind+".pb.gz"), data, 0o644); err != nil {
		b.Error(err)
	}
}
