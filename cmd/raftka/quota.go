package main

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
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

func newQuotaEntityFlags(fs *pflag.FlagSet) *quotaEntityFlags {
	f := &quotaEntityFlags{}
	fs.StringVar(&f.user, "user", "", "the user's quotas")
	fs.StringVar(&f.clientID, "client-id", "", "the client id's quotas")
	fs.BoolVar(&f.defaultUser, "default-user", false, "the quotas of users that have none of their own")
	fs.BoolVar(&f.defaultClientID, "default-client-id", false, "the quotas of client ids that have none of their own")
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

func quotaList(fs *pflag.FlagSet) runFunc {
	sel := newQuotaEntityFlags(fs)
	return func(ctx context.Context, e *env, _ []string) error {
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
}

func quotaAlter(fs *pflag.FlagSet) runFunc {
	sel := newQuotaEntityFlags(fs)
	var sets []string
	fs.StringArrayVar(&sets, "set", nil, "set a quota, key=value: producer_byte_rate or consumer_byte_rate, in bytes/s per broker (repeat for more); the brokers refuse the quotas they do not enforce")
	var deletes []string
	fs.StringArrayVar(&deletes, "delete", nil, "delete a quota, which then takes its default (repeat for more)")
	return func(ctx context.Context, e *env, _ []string) error {
		if len(sets)+len(deletes) == 0 {
			return usagef("name at least one --set or --delete")
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
				return refused(a.Err, a.ErrMessage)
			}
		}
		return e.report(map[string]any{"entity": entity.String(), "altered": len(ops)}, "altered %d quotas of %s", len(ops), entity)
	}
}
