package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Client quotas of users and client ids, kept in the brokers' metadata
// (kafka-configs.sh --entity-type users|clients does the same).

// quotaEntityFlags select a quota entity: a user or the default user, a
// client id or the default client id, or both.
type quotaEntityFlags struct {
	user, clientID               string
	defaultUser, defaultClientID bool
}

func newQuotaEntityFlags(fs *flag.FlagSet) *quotaEntityFlags {
	f := &quotaEntityFlags{}
	fs.StringVar(&f.user, "user", "", "")
	fs.StringVar(&f.clientID, "client-id", "", "")
	fs.BoolVar(&f.defaultUser, "default-user", false, "")
	fs.BoolVar(&f.defaultClientID, "default-client-id", false, "")
	return f
}

// entity is the entity the flags name; an error when they name none or
// a name and its default at once.
func (f *quotaEntityFlags) entity() (kadm.ClientQuotaEntity, error) {
	var e kadm.ClientQuotaEntity
	for _, c := range []struct {
		kind, name string
		deflt      bool
	}{{"user", f.user, f.defaultUser}, {"client-id", f.clientID, f.defaultClientID}} {
		switch {
		case c.name != "" && c.deflt:
			return nil, usagef("--%s and --default-%s name one entity at most", c.kind, c.kind)
		case c.deflt:
			e = append(e, kadm.ClientQuotaEntityComponent{Type: c.kind})
		case c.name != "":
			name := c.name
			e = append(e, kadm.ClientQuotaEntityComponent{Type: c.kind, Name: &name})
		}
	}
	return e, nil
}

func quotaList(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("quota list", flag.ContinueOnError)
	sel := newQuotaEntityFlags(fs)
	if rest, err := parseArgs(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return usagef("no arguments besides the flags")
	}
	entity, err := sel.entity()
	if err != nil {
		return err
	}
	// Not strict: the entities with these components, and any others.
	filter := []kadm.DescribeClientQuotaComponent{}
	for _, c := range entity {
		match := kadm.QuotasMatchType(0)
		if c.Name == nil {
			match = 1
		}
		filter = append(filter, kadm.DescribeClientQuotaComponent{Type: c.Type, MatchName: c.Name, MatchType: match})
	}
	if len(filter) == 0 {
		filter = []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 2}}
	}
	adm, done, err := e.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	described, err := adm.DescribeClientQuotas(ctx, false, filter)
	if err != nil {
		return err
	}
	if len(entity) == 0 {
		// Every entity: those without a user too.
		clients, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: 2}})
		if err != nil {
			return err
		}
		described = append(described, clients...)
	}
	type row struct {
		Entity string             `json:"entity"`
		Quotas map[string]float64 `json:"quotas"`
	}
	rows := []row{}
	for _, d := range described {
		r := row{Entity: d.Entity.String(), Quotas: map[string]float64{}}
		for _, v := range d.Values {
			r.Quotas[v.Key] = v.Value
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Entity < rows[j].Entity })
	if e.json {
		return printJSON(e.out, rows)
	}
	var cells [][]string
	for _, r := range rows {
		var kv []string
		for k, v := range r.Quotas {
			kv = append(kv, k+"="+strconv.FormatFloat(v, 'f', -1, 64))
		}
		sort.Strings(kv)
		cells = append(cells, []string{r.Entity, strings.Join(kv, " ")})
	}
	return printTable(e.out, []string{"ENTITY", "QUOTAS"}, cells)
}

func quotaAlter(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("quota alter", flag.ContinueOnError)
	sel := newQuotaEntityFlags(fs)
	var sets, deletes listFlag
	fs.Var(&sets, "set", "")
	fs.Var(&deletes, "delete", "")
	if rest, err := parseArgs(fs, args); err != nil {
		return err
	} else if len(rest) > 0 || len(sets)+len(deletes) == 0 {
		return usagef("name the entity with flags, and at least one --set or --delete")
	}
	entity, err := sel.entity()
	if err != nil {
		return err
	}
	if len(entity) == 0 {
		return usagef("name a user, a client id, or a default")
	}
	kv, err := keyValues(sets)
	if err != nil {
		return err
	}
	var ops []kadm.AlterClientQuotaOp
	for k, v := range kv {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return usagef("--set %s=%s: not a number", k, v)
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: n})
	}
	for _, k := range deletes {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
	}
	adm, done, err := e.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	altered, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
	if err != nil {
		return err
	}
	for _, a := range altered {
		if a.Err != nil {
			return fmt.Errorf("%w: %s", a.Err, a.ErrMessage)
		}
	}
	_, _ = fmt.Fprintf(e.out, "altered %d quotas of %s\n", len(ops), entity)
	return nil
}
