package brokertest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Options tune a test cluster.
type Options struct {
	Brokers int
	// Binary is the broker binary, Binary(t) if empty: a benchmark runs
	// another build beside this one.
	Binary string
	// ExtraFlags are passed to every broker.
	ExtraFlags []string
	// DataRoot is where the brokers' data directories are made: a tmpfs
	// such as /dev/shm takes the disk out of a measurement. A test
	// temporary directory by default.
	DataRoot string
	// Namespaces runs each broker in a network namespace of its own on a
	// bridge the test creates, so that Isolate can cut it off from the
	// other brokers. Needs root.
	Namespaces bool
	// Racks are the brokers' racks (--rack), by broker id; none where
	// the list is shorter or the entry empty.
	Racks []string
	// OpenFileLimits are the brokers' open-file limits (Broker.OpenFileLimit),
	// by broker id; the test's own where the list is shorter or the entry 0.
	OpenFileLimits []int
	// FoundingVoters is how many of the first brokers found the metadata
	// group (--metadata-voters); min(3, Brokers) if 0. The others join it
	// as observers.
	FoundingVoters int
	// Listeners are Kafka listeners each broker has beside its PLAINTEXT
	// one (KafkaAddr), as name and security protocol; their addresses
	// are in Broker.Listeners.
	Listeners []Listener
	// InterBrokerUser makes the first listener (KafkaAddr) SASL_PLAINTEXT:
	// the brokers authenticate to each other on it as this user, a super
	// user whose password is in a users directory (--scram-users-dir),
	// and Client and Admin authenticate as it too.
	InterBrokerUser *User
	// Users are more users in the same users directory.
	Users []User
	// RaftTLS makes the Raft transport mutual TLS, with certificates of a
	// CA of the cluster's own (Cluster.RaftCA).
	RaftTLS bool
	// InterBrokerTLS makes the first listener SASL_SSL, with InterBrokerUser:
	// its certificate is of a CA of the cluster's own (Cluster.ListenerCA),
	// which the brokers, Client and Admin trust.
	InterBrokerTLS bool
}

// Listener is a named Kafka listener with its security protocol.
type Listener struct{ Name, Protocol string }

// User is a SCRAM-SHA-512 user name and password.
type User struct{ Name, Password string }

// Broker is one broker process of a test cluster.
type Broker struct {
	ID                  int
	KafkaAddr, RaftAddr string
	HTTPAddr            string
	// Listeners are the addresses of Options.Listeners, by name.
	Listeners        map[string]string
	DataDir, LogPath string
	// Flags are extra flags for this broker's next start.
	Flags []string
	// OpenFileLimit, if set, is the open-file limit (RLIMIT_NOFILE, soft
	// and hard) of this broker's next start, set by util-linux's prlimit.
	OpenFileLimit int
	cmd           *exec.Cmd
	exited        chan struct{}
}

// Cluster is a set of broker processes.
type Cluster struct {
	t      testing.TB
	bin    string
	voters string
	join   string
	flags  []string
	admin  *kadm.Client
	net    *network // nil unless Options.Namespaces
	// listeners are Options.Listeners.
	listeners   []Listener
	interBroker *User
	// RaftCA signed the brokers' Raft certificates, with Options.RaftTLS.
	RaftCA *CA
	// ListenerCA signed the inter-broker listener's certificate, with
	// Options.InterBrokerTLS.
	ListenerCA *CA
	Brokers    []*Broker
}

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// Binary returns the broker binary: $RAFTKA_BROKER_BIN, or one built once
// per test process.
func Binary(t testing.TB) string {
	if bin := os.Getenv("RAFTKA_BROKER_BIN"); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "raftka-broker-bin")
		if err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(dir, "raftka-broker")
		out, err := exec.Command("go", "build", "-o", buildBin, "github.com/raftka/raftka/broker/cmd/raftka-broker").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// SkipIfShort skips tests that start broker processes under -short.
func SkipIfShort(t testing.TB) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
}

// Start starts a cluster and waits until every broker is ready. The
// cluster is stopped when the test ends.
func Start(t testing.TB, opts Options) *Cluster {
	SkipIfShort(t)
	if opts.Brokers == 0 {
		opts.Brokers = 3
	}
	if opts.Binary == "" {
		opts.Binary = Binary(t)
	}
	c := &Cluster{t: t, bin: opts.Binary, flags: opts.ExtraFlags, listeners: opts.Listeners, interBroker: opts.InterBrokerUser}
	root := t.TempDir()
	if opts.RaftTLS {
		c.useRaftTLS()
	}
	if opts.InterBrokerTLS {
		c.useInterBrokerTLS()
	}
	if u := opts.InterBrokerUser; u != nil {
		users := filepath.Join(root, "users")
		if err := os.Mkdir(users, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, u := range append([]User{*u}, opts.Users...) {
			if err := os.WriteFile(filepath.Join(users, u.Name), []byte(u.Password), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		c.flags = append([]string{"--scram-users-dir", users, "--inter-broker-user", u.Name, "--super-users", "User:" + u.Name}, c.flags...)
	}
	if opts.DataRoot != "" {
		dir, err := os.MkdirTemp(opts.DataRoot, "raftka-test")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		root = dir
	}
	var ports []int
	if opts.Namespaces {
		c.net = newNetwork(t, opts.Brokers)
	} else {
		ports = freePorts(t, (3+len(opts.Listeners))*opts.Brokers)
	}
	if opts.FoundingVoters == 0 {
		opts.FoundingVoters = min(3, opts.Brokers)
	}
	var voters, join []string
	for i := 0; i < opts.Brokers; i++ {
		b := &Broker{ID: i,
			DataDir: filepath.Join(root, fmt.Sprintf("broker-%d", i), "data"),
			LogPath: filepath.Join(root, fmt.Sprintf("broker-%d", i), "log"),
		}
		if i < len(opts.Racks) && opts.Racks[i] != "" {
			b.Flags = append(b.Flags, "--rack="+opts.Racks[i])
		}
		if i < len(opts.OpenFileLimits) {
			b.OpenFileLimit = opts.OpenFileLimits[i]
		}
		if c.net != nil {
			// Each broker has the ports of its namespace to itself.
			host := c.net.addr(i)
			b.KafkaAddr, b.RaftAddr, b.HTTPAddr = host+":9092", host+":7100", host+":8080"
		} else {
			mine := ports[(3+len(opts.Listeners))*i:]
			b.KafkaAddr = "127.0.0.1:" + strconv.Itoa(mine[0])
			b.RaftAddr = "127.0.0.1:" + strconv.Itoa(mine[1])
			b.HTTPAddr = "127.0.0.1:" + strconv.Itoa(mine[2])
		}
		b.Listeners = map[string]string{}
		for j, l := range opts.Listeners {
			if c.net != nil {
				b.Listeners[l.Name] = c.net.addr(i) + ":" + strconv.Itoa(9094+j)
			} else {
				b.Listeners[l.Name] = "127.0.0.1:" + strconv.Itoa(ports[(3+len(opts.Listeners))*i+3+j])
			}
		}
		c.Brokers = append(c.Brokers, b)
		if i < opts.FoundingVoters {
			voters = append(voters, fmt.Sprintf("%d=%s", i, b.RaftAddr))
		}
		if i < 3 {
			join = append(join, b.HTTPAddr)
		}
	}
	c.voters, c.join = strings.Join(voters, ","), strings.Join(join, ",")
	t.Cleanup(c.StopAll)
	for i := range c.Brokers {
		c.Restart(i)
	}
	for i := range c.Brokers {
		c.WaitReady(i)
	}
	if c.interBroker != nil {
		c.waitAuthenticates()
	}
	return c
}

// useRaftTLS has the brokers' next starts run the Raft transport over
// mutual TLS, with certificates of a new CA (Cluster.RaftCA).
func (c *Cluster) useRaftTLS() {
	c.RaftCA = NewCA(c.t)
	cert, key := c.RaftCA.IssuePeer(c.t, 2, "broker")
	dir := writeTLSDir(c.t, filepath.Join(c.t.TempDir(), "raft-tls"), c.RaftCA, cert, key)
	c.flags = append([]string{"--raft-tls-ca-file", filepath.Join(dir, "ca.crt"), "--raft-tls-cert-file", filepath.Join(dir, "tls.crt"),
		"--raft-tls-key-file", filepath.Join(dir, "tls.key")}, c.flags...)
}

// useInterBrokerTLS has the brokers' next starts serve the first
// listener as SASL_SSL, with a certificate of a new CA
// (Cluster.ListenerCA), which the brokers, Client and Admin trust.
func (c *Cluster) useInterBrokerTLS() {
	if c.interBroker == nil {
		c.t.Fatal("brokertest: InterBrokerTLS needs an InterBrokerUser")
	}
	c.ListenerCA = NewCA(c.t)
	cert, key := c.ListenerCA.Issue(c.t, 2, "broker", false)
	dir := writeTLSDir(c.t, filepath.Join(c.t.TempDir(), "inter-broker-tls"), c.ListenerCA, cert, key)
	c.flags = append([]string{"--listener-ssl-dirs", "PLAINTEXT=" + dir, "--inter-broker-ssl-ca-file", filepath.Join(dir, "ca.crt")}, c.flags...)
}

// MoveToTLS stops every broker, then starts them all at once with their
// Raft transport over mutual TLS and, for a cluster with an
// InterBrokerUser, their first listener over SASL_SSL, on the data they
// had: as the operator moves a cluster created before either onto them
// (brokers with and without TLS cannot speak to each other, so none is
// restarted alone). It waits until every broker is ready.
func (c *Cluster) MoveToTLS() {
	for i := range c.Brokers {
		c.Stop(i)
	}
	c.useRaftTLS()
	if c.interBroker != nil {
		c.useInterBrokerTLS()
	}
	if c.admin != nil { // dialed without TLS
		c.admin.Close()
		c.admin = nil
	}
	for i := range c.Brokers {
		c.Restart(i)
	}
	for i := range c.Brokers {
		c.WaitReady(i)
	}
}

// writeTLSDir writes a certificate, its key and its CA into a new
// directory dir, as a mounted kubernetes.io/tls Secret lays them out.
func writeTLSDir(t testing.TB, dir string, ca *CA, cert, key []byte) string {
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"ca.crt": ca.PEM, "tls.crt": cert, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// listenerFlags are a broker's flags for its Kafka listeners.
func (c *Cluster) listenerFlags(b *Broker) []string {
	if len(c.listeners) == 0 && c.interBroker == nil {
		return []string{"--listen", b.KafkaAddr}
	}
	listeners, protocols := []string{"PLAINTEXT://" + b.KafkaAddr}, []string{"PLAINTEXT:PLAINTEXT"}
	switch {
	case c.ListenerCA != nil:
		protocols[0] = "PLAINTEXT:SASL_SSL"
	case c.interBroker != nil:
		protocols[0] = "PLAINTEXT:SASL_PLAINTEXT"
	}
	for _, l := range c.listeners {
		listeners = append(listeners, l.Name+"://"+b.Listeners[l.Name])
		protocols = append(protocols, l.Name+":"+l.Protocol)
	}
	return []string{"--listeners", strings.Join(listeners, ","), "--listener-security-protocol-map", strings.Join(protocols, ",")}
}

// freePorts picks ports below the kernel's ephemeral range: a broker's
// Raft port must stay free while the broker is down, and a port in the
// ephemeral range may meanwhile be taken by some outgoing connection.
func freePorts(t testing.TB, n int) []int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				low = v
			}
		}
	}
	var ports []int
	for tries := 0; len(ports) < n && tries < 10000; tries++ {
		p := 10000 + rand.IntN(low-10000)
		if slices.Contains(ports, p) {
			continue // free, but already given: two brokers would share it (CI saw one)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		ln.Close()
		ports = append(ports, p)
	}
	if len(ports) < n {
		t.Fatal("no free ports")
	}
	return ports
}

// Restart starts broker i if it is not running.
func (c *Cluster) Restart(i int) {
	b := c.Brokers[i]
	if b.cmd != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(b.LogPath), 0o755); err != nil {
		c.t.Fatal(err)
	}
	logf, err := os.OpenFile(b.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	rf := min(len(c.Brokers), 3)
	args := append([]string{"--id", strconv.Itoa(i), "--data-dir", b.DataDir}, c.listenerFlags(b)...)
	args = append(append(args, "--raft-address", b.RaftAddr, "--http-listen", b.HTTPAddr, "--metadata-voters", c.voters,
		"--default-replication-factor", strconv.Itoa(rf), "--group-initial-rebalance-delay", "200ms", "--log-level", "info"), c.flags...)
	if len(c.Brokers) > 1 {
		args = append(args, "--join", c.join)
	}
	args = append(args, b.Flags...)
	cmd := exec.Command(c.bin, args...)
	if b.OpenFileLimit > 0 {
		n := strconv.Itoa(b.OpenFileLimit)
		cmd = exec.Command("prlimit", append([]string{"--nofile=" + n + ":" + n, "--", c.bin}, args...)...)
	}
	if c.net != nil {
		cmd = c.net.command(i, c.bin, args...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	b.cmd, b.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}(b.exited)
}

// Kill SIGKILLs broker i and waits for it to die.
func (c *Cluster) Kill(i int) { c.signal(i, syscall.SIGKILL) }

// Stop stops broker i gracefully.
func (c *Cluster) Stop(i int) { c.signal(i, syscall.SIGTERM) }

// Pause stops broker i's process where it is (SIGSTOP): its ports still
// accept connections, as a stalled process's do, but nothing answers.
func (c *Cluster) Pause(i int) {
	if b := c.Brokers[i]; b.cmd != nil {
		_ = b.cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// Resume lets a paused broker run again.
func (c *Cluster) Resume(i int) {
	if b := c.Brokers[i]; b.cmd != nil {
		_ = b.cmd.Process.Signal(syscall.SIGCONT)
	}
}

func (c *Cluster) signal(i int, sig syscall.Signal) {
	b := c.Brokers[i]
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Signal(sig)
	_ = b.cmd.Process.Signal(syscall.SIGCONT) // a paused process acts on it only when running
	select {
	case <-b.exited:
	case <-time.After(15 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.exited
	}
	b.cmd = nil
}

// CrashAll SIGKILLs every broker at once, as a power loss would, then
// starts them all again and waits until each is ready: they rebuild from
// what they had made durable.
func (c *Cluster) CrashAll() {
	for i := range c.Brokers {
		c.Kill(i)
	}
	for i := range c.Brokers {
		c.Restart(i)
	}
	for i := range c.Brokers {
		c.WaitReady(i)
	}
}

// StopAll stops every broker.
func (c *Cluster) StopAll() {
	for i := range c.Brokers {
		c.Stop(i)
	}
	if c.t.Failed() {
		for _, b := range c.Brokers {
			if log, err := os.ReadFile(b.LogPath); err == nil {
				lines := strings.Split(strings.TrimSpace(string(log)), "\n")
				c.t.Logf("broker %d log (last lines):\n%s", b.ID, strings.Join(lines[max(0, len(lines)-30):], "\n"))
			}
		}
	}
}

// Isolate cuts broker i off from every other broker (it still reaches the
// test process, and its clients it): packets between them are lost, as in
// a network partition. It needs Options.Namespaces.
func (c *Cluster) Isolate(i int) {
	for j := range c.Brokers {
		if j != i {
			c.net.setCut(i, j, true)
		}
	}
}

// Heal mends every cut Isolate made.
func (c *Cluster) Heal() {
	for i := range c.Brokers {
		for j := i + 1; j < len(c.Brokers); j++ {
			c.net.setCut(i, j, false)
		}
	}
}

// LoseDisk deletes stopped broker i's data directory, as a lost volume or
// a deleted PersistentVolumeClaim would.
func (c *Cluster) LoseDisk(i int) {
	if c.Running(i) {
		c.t.Fatalf("broker %d is running: stop it before its disk goes", i)
	}
	if err := os.RemoveAll(c.Brokers[i].DataDir); err != nil {
		c.t.Fatal(err)
	}
}

// WaitExit waits up to d for broker i to exit by itself and reports
// whether it did.
func (c *Cluster) WaitExit(i int, d time.Duration) bool {
	b := c.Brokers[i]
	if b.cmd == nil {
		return true
	}
	select {
	case <-b.exited:
		b.cmd = nil
		return true
	case <-time.After(d):
		return false
	}
}

// Running reports whether broker i is running.
func (c *Cluster) Running(i int) bool { return c.Brokers[i].cmd != nil }

// WaitReady waits until broker i answers /readyz with 200.
func (c *Cluster) WaitReady(i int) {
	b := c.Brokers[i]
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-b.exited:
			c.t.Fatalf("broker %d exited while starting", i)
		default:
		}
		resp, err := http.Get("http://" + b.HTTPAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("broker %d not ready after 60s", i)
}

// Bootstrap returns the Kafka addresses of the running brokers.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for i, b := range c.Brokers {
		if c.Running(i) {
			out = append(out, b.KafkaAddr)
		}
	}
	return out
}

// AllAddrs returns every broker's Kafka address, running or not.
func (c *Cluster) AllAddrs() []string {
	var out []string
	for _, b := range c.Brokers {
		out = append(out, b.KafkaAddr)
	}
	return out
}

// waitAuthenticates waits until the inter-broker user's credential, which
// the brokers set from their users directory, reached the metadata.
func (c *Cluster) waitAuthenticates() {
	deadline := time.Now().Add(30 * time.Second)
	for {
		cl := c.Client(kgo.RequestRetries(0))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		cancel()
		cl.Close()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the inter-broker user does not authenticate: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Client returns a franz-go client for the cluster, closed with the test.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	base := []kgo.Opt{kgo.SeedBrokers(c.AllAddrs()...)}
	if u := c.interBroker; u != nil {
		base = append(base, kgo.SASL(scram.Auth{User: u.Name, Pass: u.Password}.AsSha512Mechanism()))
	}
	if c.ListenerCA != nil {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(c.ListenerCA.PEM)
		base = append(base, kgo.DialTLSConfig(&tls.Config{RootCAs: roots}))
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client for the cluster.
func (c *Cluster) Admin() *kadm.Client {
	if c.admin == nil {
		c.admin = kadm.NewClient(c.Client())
	}
	return c.admin
}

// CreateTopic creates a topic and fails the test if it cannot.
func (c *Cluster) CreateTopic(name string, partitions int32, rf int16, configs map[string]*string) {
	c.createTopicRetrying(name, func(ctx context.Context) error {
		resp, err := c.Admin().CreateTopic(ctx, partitions, rf, configs, name)
		if err == nil {
			err = resp.Err
		}
		return err
	})
}

// CreateTopicOn creates a topic whose partition i has the replicas
// assignment[i], the first its preferred leader, and fails the test if it
// cannot.
func (c *Cluster) CreateTopicOn(name string, assignment [][]int32) {
	c.createTopicRetrying(name, func(ctx context.Context) error {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
		for i, replicas := range assignment {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = int32(i), replicas
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, c.Client())
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		return err
	})
}

// createTopicRetrying runs create until it succeeds, retrying a retriable
// Kafka error as clients do: a metadata leader that loses its leadership
// mid-proposal answers REQUEST_TIMED_OUT though the topic may have been
// created, so TOPIC_ALREADY_EXISTS after such a retry is success.
func (c *Cluster) createTopicRetrying(name string, create func(context.Context) error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	retried := false
	for {
		err := create(ctx)
		switch {
		case err == nil, retried && errors.Is(err, kerr.TopicAlreadyExists):
			return
		case kerr.IsRetriable(err) && ctx.Err() == nil:
			c.t.Logf("create topic %s: %v; retrying", name, err)
			retried = true
			time.Sleep(200 * time.Millisecond)
		default:
			c.t.Fatalf("create topic %s: %v", name, err)
		}
	}
}

// LeaderOf returns the broker that leads a partition, as Metadata says.
func (c *Cluster) LeaderOf(topic string, partition int32) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		md, err := c.Admin().Metadata(ctx, topic)
		if err == nil {
			if p, ok := md.Topics[topic].Partitions[partition]; ok && p.Leader >= 0 {
				return int(p.Leader)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("no leader for %s/%d", topic, partition)
	return -1
}

// Metric scrapes broker i's /metrics and returns the first sample of name
// whose labels contain every given label text (such as `topic="t"`).
func (c *Cluster) Metric(i int, name string, labels ...string) (float64, bool) {
	resp, err := http.Get("http://" + c.Brokers[i].HTTPAddr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
lines:
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue lines
			}
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		return v, err == nil
	}
	return 0, false
}

// Get fetches a path from broker i's HTTP listener.
func (c *Cluster) Get(i int, path string) (int, string) {
	resp, err := http.Get("http://" + c.Brokers[i].HTTPAddr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// RSS returns broker i's resident memory in bytes, from /proc.
func (c *Cluster) RSS(i int) int64 { return c.procValue(i, "status", "VmRSS:") * 1024 }

// WrittenBytes is how many bytes broker i's process has caused to be
// written to storage (/proc/PID/io write_bytes), or 0 if it is not running.
func (c *Cluster) WrittenBytes(i int) int64 { return c.procValue(i, "io", "write_bytes:") }

// CPUTime is the CPU time broker i's process has used (user and system),
// from /proc/PID/stat, or 0 if it is not running.
func (c *Cluster) CPUTime(i int) time.Duration {
	b := c.Brokers[i]
	if b.cmd == nil {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th of the whole line, in clock ticks of 1/100 s on Linux.
	_, rest, ok := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// procValue is the number after key in broker i's /proc/PID/file, or 0.
func (c *Cluster) procValue(i int, file, key string) int64 {
	b := c.Brokers[i]
	if b.cmd == nil {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", b.cmd.Process.Pid, file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// FreePort is a free port on 127.0.0.1 for a helper process of a test (a
// ZooKeeper, an HTTP server), picked as the brokers' are.
func FreePort(t testing.TB) int { return freePorts(t, 1)[0] }
