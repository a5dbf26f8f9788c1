package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/raftka/raftka/broker/security"
)

func TestAdvertisedListenersByID(t *testing.T) {
	byID := "0=EXTERNAL://10.0.0.5:31000; 1=EXTERNAL://10.0.0.6:31001,TLS://lb.example.com:9094"
	for id, want := range map[int]string{
		0: "REPLICATION://b-0.svc:9091,TLS://b-0.svc:9094,EXTERNAL://10.0.0.5:31000",
		1: "REPLICATION://b-1.svc:9091,EXTERNAL://10.0.0.6:31001,TLS://lb.example.com:9094",
		2: "REPLICATION://b-2.svc:9091,TLS://b-2.svc:9094,EXTERNAL://b-2.svc:9095",
	} {
		base := "REPLICATION://b-" + strconv.Itoa(id) + ".svc:9091,TLS://b-" + strconv.Itoa(id) + ".svc:9094,EXTERNAL://b-" + strconv.Itoa(id) + ".svc:9095"
		mine, err := advertisedByID(byID, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := replaceAdvertised(base, mine); got != want {
			t.Errorf("broker %d: %s, want %s", id, got, want)
		}
	}
	if _, err := advertisedByID("x=EXTERNAL://h:1", 0); err == nil {
		t.Error("a malformed id was taken")
	}
}

func TestListenerClientAuth(t *testing.T) {
	listeners := []security.Listener{{Name: "REPLICATION", Protocol: security.SASLPlaintext}, {Name: "MTLS", Protocol: security.SSL},
		{Name: "TLS", Protocol: security.SSL}, {Name: "SCRAM", Protocol: security.SASLSSL}}
	shared := security.TLSConfig{CertFile: "/shared/tls.crt", KeyFile: "/shared/tls.key", ClientAuth: "none"}
	own := security.TLSConfig{CertFile: "/mtls/tls.crt", KeyFile: "/mtls/tls.key", CAFile: "/mtls/ca.crt", ClientAuth: "none"}
	perListener := map[string]security.TLSConfig{"MTLS": own}
	if err := parseListenerClientAuth("mtls=required", listeners, shared, perListener); err != nil {
		t.Fatal(err)
	}
	own.ClientAuth, own.ListenerClientAuth = "required", true
	if perListener["MTLS"] != own {
		t.Errorf("MTLS: %+v, want its own files asking for a certificate: %+v", perListener["MTLS"], own)
	}
	if err := parseListenerClientAuth("TLS=requested", listeners, shared, perListener); err != nil {
		t.Fatal(err)
	}
	if got := perListener["TLS"]; got.CertFile != shared.CertFile || got.ClientAuth != "requested" {
		t.Errorf("TLS: %+v, want the shared files asking for a certificate", got)
	}
	// KIP-684: a SASL_SSL listener may ask for certificates too.
	if err := parseListenerClientAuth("SCRAM=required", listeners, shared, perListener); err != nil {
		t.Fatal(err)
	}
	if got := perListener["SCRAM"]; got.ClientAuth != "required" || !got.ListenerClientAuth {
		t.Errorf("SCRAM: %+v, want the shared files asking for a certificate", got)
	}
	for _, bad := range []string{"REPLICATION=required", "NOPE=required", "MTLS", "TLS=required,TLS=none"} {
		if err := parseListenerClientAuth(bad, listeners, shared, map[string]security.TLSConfig{}); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}

// --help is an answer, exit 0 with the flags on stdout; a flag the broker
// does not know is a mistake in the command line (exit 2), with its
// name, as the raftka tool answers.
func TestHelpAndUnknownFlags(t *testing.T) {
	if bin := os.Getenv("RAFTKA_BROKER_BIN"); bin != "" {
		out, err := exec.Command(bin, "--help").Output()
		if err != nil || !strings.Contains(string(out), "Usage: raftka-broker [flags]") || !strings.Contains(string(out), "-data-dir") {
			t.Errorf("raftka-broker --help: %v, stdout %q", err, out)
		}
		var exit *exec.ExitError
		if err := exec.Command(bin, "--no-such-flag").Run(); !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("raftka-broker --no-such-flag: %v, want exit 2", err)
		}
	}
	if err := run([]string{"--no-such-flag"}); !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "no-such-flag") {
		t.Errorf("run(--no-such-flag) = %v, want a usage error naming it", err)
	}
}
