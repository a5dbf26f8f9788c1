// Package brokerclient is how the operator reaches brokers: Kafka admin
// clients (franz-go kadm) per cluster, and the brokers' HTTP checks. It is
// the operator's only way to the brokers.
package brokerclient

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/raftka/raftka/broker/growth"
)

// Clients caches one Kafka client per bootstrap address list.
type Clients struct {
	// Override maps "namespace/name" of a BrokerCluster to bootstrap
	// addresses, for an operator running outside the cluster network.
	Override map[string][]string

	mu      sync.Mutex
	clients map[string]*kgo.Client
}

// ParseOverride reads "ns/name=host:port,host:port;ns/other=host:port".
func ParseOverride(s string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, addrs, ok := strings.Cut(part, "=")
		if !ok || !strings.Contains(key, "/") || addrs == "" {
			return nil, fmt.Errorf("bootstrap override %q: want namespace/name=host:port[,host:port]", part)
		}
		out[key] = strings.Split(addrs, ",")
	}
	return out, nil
}

// Access is how the operator reaches a cluster: the seed addresses of a
// listener and, where that listener authenticates, the operator's
// SCRAM-SHA-512 credential.
type Access struct {
	Addrs []string
	// User and Password are empty where the listener does not
	// authenticate.
	User, Password string
	// CACert is the PEM CA the listener's certificate is checked against,
	// for the host dialed; empty where the listener is not TLS.
	CACert []byte
}

// key names the cached client of an access: a changed password makes a
// new one.
func (a Access) key() (addrs, full string) {
	sorted := append([]string(nil), a.Addrs...)
	sort.Strings(sorted)
	addrs = strings.Join(sorted, ",") + "|" + a.User
	sum := sha256.Sum256([]byte(a.Password))
	ca := sha256.Sum256(a.CACert)
	return addrs, addrs + "|" + hex.EncodeToString(sum[:8]) + "|" + hex.EncodeToString(ca[:8])
}

// options are the client options of an access.
func (a Access) options() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(a.Addrs...)}
	if a.User != "" {
		opts = append(opts, kgo.SASL(scram.Auth{User: a.User, Pass: a.Password}.AsSha512Mechanism()))
	}
	if len(a.CACert) > 0 {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(a.CACert)
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}))
	}
	return opts
}

// Bootstrap returns how to reach a cluster: in, its addresses replaced by
// the cluster's override, dialed without TLS, if it has one.
func (c *Clients) Bootstrap(namespace, name string, in Access) Access {
	c.mu.Lock()
	defer c.mu.Unlock()
	if addrs, ok := c.Override[namespace+"/"+name]; ok {
		// Addresses of the operator's own (brokers on 127.0.0.1, a port
		// forward) are no names the brokers' certificates carry: they
		// are dialed as they are.
		in.Addrs, in.CACert = addrs, nil
	}
	return in
}

// SetOverride points the BrokerCluster "namespace/name" at addrs.
func (c *Clients) SetOverride(key string, addrs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Override == nil {
		c.Override = map[string][]string{}
	}
	c.Override[key] = addrs
}

// Kafka returns the cached Kafka client of an access, for reads that
// kadm does not make (internal/lag's Fetch).
func (c *Clients) Kafka(access Access) (*kgo.Client, error) { return c.client(access) }

// Admin returns a cached admin client for an access.
func (c *Clients) Admin(access Access) (*kadm.Client, error) {
	cl, err := c.client(access)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// RegisteredBroker is a broker the cluster's metadata records.
type RegisteredBroker struct {
	ID int32
	// Address is where it serves clients, host:port, as it registered.
	Address string
	// Fenced: it does not answer its peers.
	Fenced bool
}

// Registered lists the brokers the cluster records, those that do not
// answer included (DescribeCluster v2).
func (c *Clients) Registered(ctx context.Context, access Access) ([]RegisteredBroker, error) {
	cl, err := c.client(access)
	if err != nil {
		return nil, err
	}
	return ReadRegistered(ctx, cl)
}

// ReadRegistered is Registered through a client of the caller's own (the
// raftka command's).
func ReadRegistered(ctx context.Context, r kmsg.Requestor) ([]RegisteredBroker, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	out := make([]RegisteredBroker, 0, len(resp.Brokers))
	for _, b := range resp.Brokers {
		out = append(out, RegisteredBroker{ID: b.NodeID, Address: net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), Fenced: b.IsFenced})
	}
	return out, nil
}

// Unregister forgets a broker that left the cluster for good
// (UnregisterBroker): it must be stopped and hold no partition replica.
func (c *Clients) Unregister(ctx context.Context, access Access, id int32) error {
	cl, err := c.client(access)
	if err != nil {
		return err
	}
	return Unregister(ctx, cl, id)
}

// Unregister is (*Clients).Unregister through a client of the caller's
// own.
func Unregister(ctx context.Context, r kmsg.Requestor, id int32) error {
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		return err
	}
	return errorWithMessage(resp.ErrorCode, resp.ErrorMessage)
}

// Quorum is the metadata group's voters and observers by broker id
// (DescribeQuorum), each list sorted.
type Quorum struct {
	Leader    int32
	Voters    []int32
	Observers []int32
}

// MetadataQuorum asks for the metadata group's members.
func (c *Clients) MetadataQuorum(ctx context.Context, access Access) (Quorum, error) {
	cl, err := c.client(access)
	if err != nil {
		return Quorum{}, err
	}
	return ReadQuorum(ctx, cl)
}

// ReadQuorum is MetadataQuorum through a client of the caller's own.
func ReadQuorum(ctx context.Context, r kmsg.Requestor) (Quorum, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		return Quorum{}, err
	}
	if err := errorWithMessage(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return Quorum{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return Quorum{}, fmt.Errorf("DescribeQuorum answered %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := errorWithMessage(p.ErrorCode, p.ErrorMessage); err != nil {
		return Quorum{}, err
	}
	q := Quorum{Leader: p.LeaderID}
	for _, v := range p.CurrentVoters {
		q.Voters = append(q.Voters, v.ReplicaID)
	}
	for _, o := range p.Observers {
		q.Observers = append(q.Observers, o.ReplicaID)
	}
	slices.Sort(q.Voters)
	slices.Sort(q.Observers)
	return q, nil
}

// AddVoter makes a running broker a metadata voter (AddRaftVoter).
func (c *Clients) AddVoter(ctx context.Context, access Access, id int32) error {
	cl, err := c.client(access)
	if err != nil {
		return err
	}
	return AddVoter(ctx, cl, id)
}

// AddVoter is (*Clients).AddVoter through a client of the caller's own.
func AddVoter(ctx context.Context, r kmsg.Requestor, id int32) error {
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.VoterID = id
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		return err
	}
	return errorWithMessage(resp.ErrorCode, resp.ErrorMessage)
}

// RemoveVoter takes a leaving broker out of the metadata group
// (RemoveRaftVoter): it must hold no partition replica.
func (c *Clients) RemoveVoter(ctx context.Context, access Access, id int32) error {
	cl, err := c.client(access)
	if err != nil {
		return err
	}
	return RemoveVoter(ctx, cl, id)
}

// RemoveVoter is (*Clients).RemoveVoter through a client of the caller's
// own.
func RemoveVoter(ctx context.Context, r kmsg.Requestor, id int32) error {
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.VoterID = id
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		return err
	}
	return errorWithMessage(resp.ErrorCode, resp.ErrorMessage)
}

// errorWithMessage is a Kafka error code with the broker's explanation.
func errorWithMessage(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	var known *kerr.Error
	if err == nil || msg == nil || *msg == "" || !errors.As(err, &known) {
		return err
	}
	return &CodeError{Code: known, Message: *msg}
}

// CodeError is a broker's refusal: the code, and what the broker said of
// it, printed as "CODE: message" rather than with Kafka's general
// description of the code.
type CodeError struct {
	Code    *kerr.Error
	Message string
}

func (e *CodeError) Error() string { return e.Code.Message + ": " + e.Message }
func (e *CodeError) Unwrap() error { return e.Code }

func (c *Clients) client(access Access) (*kgo.Client, error) {
	addrs, key := access.key()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients == nil {
		c.clients = map[string]*kgo.Client{}
	}
	if cl, ok := c.clients[key]; ok {
		return cl, nil
	}
	cl, err := kgo.NewClient(append(access.options(), kgo.ClientID("raftka-operator"),
		kgo.MetadataMinAge(time.Second), kgo.RequestTimeoutOverhead(5*time.Second), kgo.RetryTimeout(10*time.Second))...)
	if err != nil {
		return nil, err
	}
	// The client of a rotated password goes.
	for k, old := range c.clients {
		if strings.HasPrefix(k, addrs+"|") {
			old.Close()
			delete(c.clients, k)
		}
	}
	c.clients[key] = cl
	return cl, nil
}

// Close closes every cached client.
func (c *Clients) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		cl.Close()
	}
	c.clients = nil
}

// Check is a broker's answer to /readyz or /safe-to-restart.
type Check struct {
	OK      bool     `json:"ok"`
	Reasons []string `json:"reasons,omitempty"`
}

// SafeToRestart asks a broker whether every Raft group it belongs to keeps
// a quorum without it.
func SafeToRestart(ctx context.Context, httpAddr string) (Check, error) {
	var c Check
	err := getJSON(ctx, "http://"+httpAddr+"/safe-to-restart", &c)
	return c, err
}

// Readiness asks a broker whether it is ready (/readyz): registered, the
// metadata group and its hosted partitions led.
func Readiness(ctx context.Context, httpAddr string) (Check, error) {
	var c Check
	err := getJSON(ctx, "http://"+httpAddr+"/readyz", &c)
	return c, err
}

// Growths asks a broker for the ordered growths of topic, or of every
// topic for "" (GET /growth): the topics that have one in progress or
// lifted one.
func Growths(ctx context.Context, httpAddr, topic string) ([]growth.Status, error) {
	var out []growth.Status
	err := getJSON(ctx, "http://"+httpAddr+"/growth?topic="+url.QueryEscape(topic), &out)
	return out, err
}

// getJSON GETs a broker's JSON answer into out, whatever its status: a
// failed check answers 503 with its reasons.
func getJSON(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return nil
}

// Identity is a broker's current incarnation as the cluster records it.
type Identity struct {
	Incarnation string `json:"Incarnation"`
	Generation  int64  `json:"Generation"`
}

// BrokerIdentity asks a broker for its own record in the metadata
// (GET /internal/identity?broker=id).
func BrokerIdentity(ctx context.Context, httpAddr string, id int32) (Identity, error) {
	var answer struct {
		Asked *Identity `json:"asked"`
	}
	if err := getJSON(ctx, fmt.Sprintf("http://%s/internal/identity?broker=%d", httpAddr, id), &answer); err != nil {
		return Identity{}, err
	}
	if answer.Asked == nil {
		return Identity{}, fmt.Errorf("broker %d at %s is not registered yet", id, httpAddr)
	}
	return *answer.Asked, nil
}
