package brokerclient

import (
	"context"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/brokertest"
)

// The operator reaches a SASL_SSL replication listener over TLS, checking
// the brokers' certificate against the cluster's CA, and no other way.
func TestAccessOverTLS(t *testing.T) {
	user := brokertest.User{Name: "raftka-operator", Password: "operator-secret"}
	c := brokertest.Start(t, brokertest.Options{Brokers: 1, InterBrokerUser: &user, InterBrokerTLS: true})
	pool := &Clients{}
	registered := func(access Access) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := pool.Registered(ctx, access)
		if err == nil && len(got) != 1 {
			t.Errorf("registered %v, want one broker", got)
		}
		return err
	}
	access := Access{Addrs: c.AllAddrs(), User: user.Name, Password: user.Password, CACert: c.ListenerCA.PEM}
	if err := registered(access); err != nil {
		t.Fatalf("over TLS with the cluster's CA: %v", err)
	}
	// A user's login check goes the same way.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ok, err := Authenticates(ctx, Access{Addrs: access.Addrs, CACert: access.CACert}, user.Name, user.Password); !ok || err != nil {
		t.Errorf("a login over TLS: %v %v", ok, err)
	}
	plain := access
	plain.CACert = nil
	if registered(plain) == nil {
		t.Error("reached a TLS listener without TLS")
	}
	stranger := access
	stranger.CACert = brokertest.NewCA(t).PEM
	if registered(stranger) == nil {
		t.Error("took a certificate another CA signed")
	}
}

// An override's addresses are the operator's own, which no certificate
// names: they are dialed without TLS.
func TestOverrideDialsWithoutTLS(t *testing.T) {
	pool := &Clients{}
	pool.SetOverride("kafka/events", []string{"127.0.0.1:9091"})
	got := pool.Bootstrap("kafka", "events", Access{Addrs: []string{"events-brokers.kafka.svc:9091"}, User: "raftka-operator", CACert: []byte("CA")})
	if len(got.Addrs) != 1 || got.Addrs[0] != "127.0.0.1:9091" || got.CACert != nil || got.User != "raftka-operator" {
		t.Errorf("overridden access %+v", got)
	}
	if kept := pool.Bootstrap("kafka", "other", Access{CACert: []byte("CA")}); string(kept.CACert) != "CA" {
		t.Errorf("a cluster without an override lost its CA: %+v", kept)
	}
}
