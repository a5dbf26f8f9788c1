package latency

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsCluster is 3 nats-server processes on 127.0.0.1 forming one
// JetStream cluster, each storing to a directory of its own and
// fsyncing every write before acknowledging it (sync_interval: always).
type natsCluster struct {
	urls    []string
	version string
}

// startNATS starts the cluster from $RAFTKA_NATS_SERVER_BIN (make bench
// installs the pinned version in bin/), stopped when b ends.
func startNATS(b *testing.B) *natsCluster {
	bin := os.Getenv("RAFTKA_NATS_SERVER_BIN")
	if bin == "" {
		b.Fatal("RAFTKA_NATS_SERVER_BIN is not set: run `make bench`, which installs bin/nats-server")
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		b.Fatalf("%s --version: %v", bin, err)
	}
	root := b.TempDir()
	client, route := freePorts(b, 3), freePorts(b, 3)
	var routes []string
	for _, p := range route {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	c := &natsCluster{version: strings.TrimSpace(string(out))}
	for i := 0; i < 3; i++ {
		dir := filepath.Join(root, fmt.Sprint(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		conf := fmt.Sprintf(`server_name: n%d
listen: 127.0.0.1:%d
jetstream {
  store_dir: %q
  sync_interval: always
}
cluster {
  name: bench
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, i, client[i], filepath.Join(dir, "js"), route[i], strings.Join(routes, ", "))
		confPath := filepath.Join(dir, "nats.conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
			b.Fatal(err)
		}
		logf, err := os.Create(filepath.Join(dir, "log"))
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(bin, "-c", confPath)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			logf.Close()
		})
		c.urls = append(c.urls, fmt.Sprintf("nats://127.0.0.1:%d", client[i]))
	}
	return c
}

// stream creates a file stream of 3 replicas named name, once the
// cluster has elected its JetStream meta leader.
func (c *natsCluster) stream(b *testing.B, js jetstream.JetStream, name string) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 3, Storage: jetstream.FileStorage})
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("create stream %s: %v", name, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// publisher connects to the cluster and returns a sendFunc publishing
// 1 KiB messages to stream subject, acknowledged once the stream's
// leader and a majority of its replicas stored them, and a function
// that closes the connection.
func (c *natsCluster) publisher(b *testing.B, subject string, value []byte, inFlight int) (sendFunc, func()) {
	nc, err := nats.Connect(strings.Join(c.urls, ","))
	if err != nil {
		b.Fatal(err)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(2*inFlight+16))
	if err != nil {
		b.Fatal(err)
	}
	c.stream(b, js, subject)
	// Acknowledgements of one stream come back in order: one goroutine
	// waits on them in turn.
	futures := make(chan pendingPublish, inFlight+1)
	go func() {
		for p := range futures {
			select {
			case <-p.future.Ok():
				p.done(nil)
			case err := <-p.future.Err():
				p.done(err)
			}
		}
	}()
	send := func(done func(error)) {
		f, err := js.PublishAsync(subject, value)
		if err != nil {
			done(err)
			return
		}
		futures <- pendingPublish{future: f, done: done}
	}
	return send, func() { close(futures); nc.Close() }
}

type pendingPublish struct {
	future jetstream.PubAckFuture
	done   func(error)
}

// freePorts picks n ports the kernel has free now.
func freePorts(b *testing.B, n int) []int {
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		defer l.Close()
	}
	return ports
}
