package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/internal/clientsecurity"
)

// Exit codes: 0 done, 1 the cluster refused or failed, 2 a usage error.
const (
	exitFailed = 1
	exitUsage  = 2
)

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// env is what every command gets: the brokers, the output form and the
// streams.
type env struct {
	brokers []string
	// security and connect are the settings of the brokers' listener, and
	// the client options they make.
	security clientsecurity.Settings
	connect  []kgo.Opt
	json     bool
	in       io.Reader
	out      io.Writer
	errOut   io.Writer
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs the command line args and returns the exit code.
func run(args []string, in io.Reader, out, errOut io.Writer) int {
	e := &env{in: in, out: out, errOut: errOut}
	root, ran := newRoot(e)
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	_, _ = fmt.Fprintf(errOut, "%s: %v\n", cmd.CommandPath(), err)
	// What cobra refuses before a command runs (an unknown command or
	// flag, a wrong count of arguments) is a mistake in the command line,
	// as is what a command calls one.
	if !*ran || errors.As(err, new(usageError)) {
		_, _ = fmt.Fprintf(errOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	return exitFailed
}

func splitBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// client connects to the brokers; a cluster that does not answer is an
// error that says where it looked.
func (e *env) client(ctx context.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	base := append([]kgo.Opt{kgo.SeedBrokers(e.brokers...), kgo.ClientID("raftka-cli")}, e.connect...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("no broker answers at %s (%v): is the cluster up (make run), and are -b or RAFTKA_BROKERS right?", strings.Join(e.brokers, ","), err)
	}
	return cl, nil
}

func (e *env) admin(ctx context.Context) (*kadm.Client, func(), error) {
	cl, err := e.client(ctx)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}
