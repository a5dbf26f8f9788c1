package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
)

// The SCRAM users of SASL listeners, kept in the brokers' metadata
// (kafka-configs.sh --entity-type users does the same).

func userList(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		return usagef("no arguments")
	}
	adm, done, err := e.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		return err
	}
	type row struct {
		User       string   `json:"user"`
		Mechanisms []string `json:"mechanisms"`
	}
	rows := []row{}
	for _, u := range described.Sorted() {
		r := row{User: u.User, Mechanisms: []string{}}
		for _, c := range u.CredInfos {
			r.Mechanisms = append(r.Mechanisms, c.String())
		}
		rows = append(rows, r)
	}
	if e.json {
		return printJSON(e.out, rows)
	}
	var cells [][]string
	for _, r := range rows {
		cells = append(cells, []string{r.User, strings.Join(r.Mechanisms, " ")})
	}
	return printTable(e.out, []string{"USER", "CREDENTIALS"}, cells)
}

// userSetPassword sets a user's SCRAM password, read from the first line
// of stdin so that it stays out of the shell's history and ps.
func userSetPassword(fs *pflag.FlagSet) runFunc {
	mechanism := fs.String("mechanism", "SCRAM-SHA-512", "SCRAM-SHA-512 or SCRAM-SHA-256")
	iterations := fs.Int32("iterations", 8192, "SCRAM iterations (4096 to 16384)")
	return func(ctx context.Context, e *env, names []string) error {
		if len(names) != 1 {
			return usagef("name one user")
		}
		m, err := scramMechanism(*mechanism)
		if err != nil {
			return err
		}
		line, err := bufio.NewReader(e.in).ReadString('\n')
		password := strings.TrimRight(line, "\r\n")
		if password == "" {
			return usagef("give the password on stdin (%v)", err)
		}
		adm, done, err := e.admin(ctx)
		if err != nil {
			return err
		}
		defer done()
		altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: names[0], Mechanism: m, Iterations: int32(*iterations), Password: password}})
		if err == nil {
			err = altered.Error()
		}
		if err != nil {
			return fmt.Errorf("user %s: %w", names[0], err)
		}
		return e.report(map[string]any{"user": names[0], "mechanism": m}, "set the %s password of user %s", m, names[0])
	}
}

func userDelete(fs *pflag.FlagSet) runFunc {
	mechanism := fs.String("mechanism", "", "delete only this mechanism's credentials; default: all")
	return func(ctx context.Context, e *env, names []string) error {
		if len(names) != 1 {
			return usagef("name one user")
		}
		adm, done, err := e.admin(ctx)
		if err != nil {
			return err
		}
		defer done()
		var deletions []kadm.DeleteSCRAM
		if *mechanism != "" {
			m, err := scramMechanism(*mechanism)
			if err != nil {
				return err
			}
			deletions = append(deletions, kadm.DeleteSCRAM{User: names[0], Mechanism: m})
		} else {
			described, err := adm.DescribeUserSCRAMs(ctx, names[0])
			if err == nil {
				err = described[names[0]].Err
			}
			if err != nil {
				return fmt.Errorf("user %s: %w", names[0], err)
			}
			for _, c := range described[names[0]].CredInfos {
				deletions = append(deletions, kadm.DeleteSCRAM{User: names[0], Mechanism: c.Mechanism})
			}
		}
		altered, err := adm.AlterUserSCRAMs(ctx, deletions, nil)
		if err == nil {
			err = altered.Error()
		}
		if err != nil {
			return fmt.Errorf("user %s: %w", names[0], err)
		}
		return e.report(map[string]any{"deleted": names[0]}, "deleted user %s", names[0])
	}
}

func scramMechanism(name string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(name) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, usagef("--mechanism %s: want SCRAM-SHA-512 or SCRAM-SHA-256", name)
}
