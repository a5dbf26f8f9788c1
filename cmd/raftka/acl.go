package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The ACLs of brokers run with --authorizer acl (kafka-acls.sh does the
// same).

// aclFlags are the flags that name ACLs: add and remove give them whole,
// list filters by the ones given.
type aclFlags struct {
	allow, deny, hosts, operations   []string
	topics, groups, transactionalIDs []string
	cluster, prefixed                bool
}

func newACLFlags(fs *pflag.FlagSet) *aclFlags {
	f := &aclFlags{}
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster resource")
	fs.BoolVar(&f.prefixed, "prefixed", false, "the resource names are prefixes")
	fs.StringArrayVar(&f.allow, "allow", nil, "allow a principal, User:NAME or User:* (repeat for more)")
	fs.StringArrayVar(&f.deny, "deny", nil, "deny a principal, User:NAME or User:* (repeat for more)")
	fs.StringArrayVar(&f.hosts, "host", nil, "from this host only (default: any)")
	fs.StringArrayVar(&f.operations, "operation", nil, "read, write, create, delete, alter, describe, cluster_action, describe_configs, alter_configs, idempotent_write or all; comma-separated or repeated")
	fs.StringArrayVar(&f.topics, "topic", nil, "a topic (repeat for more)")
	fs.StringArrayVar(&f.groups, "group", nil, "a consumer group (repeat for more)")
	fs.StringArrayVar(&f.transactionalIDs, "transactional-id", nil, "a transactional id (repeat for more)")
	return f
}

// builder turns the flags into kadm's ACL builder; whole, every part
// must be named (add, remove), else a part not named matches any.
func (f *aclFlags) builder(whole bool) (*kadm.ACLBuilder, error) {
	b := kadm.NewACLs()
	resources := 0
	if len(f.topics) > 0 {
		b.Topics(f.topics...)
		resources++
	}
	if len(f.groups) > 0 {
		b.Groups(f.groups...)
		resources++
	}
	if len(f.transactionalIDs) > 0 {
		b.TransactionalIDs(f.transactionalIDs...)
		resources++
	}
	if f.cluster {
		b.Clusters()
		resources++
	}
	if resources == 0 {
		if whole {
			return nil, usagef("name a resource: --topic, --group, --transactional-id or --cluster")
		}
		b.AnyResource()
	}
	if whole && len(f.allow)+len(f.deny) == 0 {
		return nil, usagef("name a principal: --allow User:NAME or --deny User:NAME")
	}
	prefixUser := func(ps []string) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			if !strings.Contains(p, ":") {
				p = "User:" + p
			}
			out[i] = p
		}
		return out
	}
	switch {
	case len(f.allow) > 0:
		b.Allow(prefixUser(f.allow)...).AllowHosts(f.hosts...)
	case !whole && len(f.deny) == 0:
		b.Allow().AllowHosts(f.hosts...)
	}
	switch {
	case len(f.deny) > 0:
		b.Deny(prefixUser(f.deny)...).DenyHosts(f.hosts...)
	case !whole && len(f.allow) == 0:
		b.Deny().DenyHosts(f.hosts...)
	}
	var ops []kadm.ACLOperation
	for _, o := range f.operations {
		for _, name := range strings.Split(o, ",") {
			op, err := kmsg.ParseACLOperation(strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_"))
			if err != nil {
				return nil, usagef("--operation %s: %v", name, err)
			}
			ops = append(ops, op)
		}
	}
	switch {
	case len(ops) > 0:
		b.Operations(ops...)
	case whole:
		return nil, usagef("name an operation: --operation read,write,...")
	default:
		b.Operations(kadm.OpAny)
	}
	switch {
	case f.prefixed:
		b.ResourcePatternType(kadm.ACLPatternPrefixed)
	case whole:
		b.ResourcePatternType(kadm.ACLPatternLiteral)
	default:
		b.ResourcePatternType(kadm.ACLPatternAny)
	}
	return b, nil
}

// aclAdmin reads a command's ACL flags into kadm's builder and connects.
func (e *env) aclAdmin(ctx context.Context, f *aclFlags, whole bool) (*kadm.ACLBuilder, *kadm.Client, func(), error) {
	b, err := f.builder(whole)
	if err != nil {
		return nil, nil, nil, err
	}
	adm, done, err := e.admin(ctx)
	return b, adm, done, err
}

type aclRow struct {
	Principal  string `json:"principal"`
	Host       string `json:"host"`
	Resource   string `json:"resource"`
	Name       string `json:"name"`
	Pattern    string `json:"pattern"`
	Operation  string `json:"operation"`
	Permission string `json:"permission"`
}

func aclRowOf(d kadm.DescribedACL) aclRow {
	return aclRow{d.Principal, d.Host, d.Type.String(), d.Name, d.Pattern.String(), d.Operation.String(), d.Permission.String()}
}

func (e *env) printACLs(rows []aclRow) error {
	if e.json {
		return printJSON(e.out, rows)
	}
	var cells [][]string
	for _, r := range rows {
		cells = append(cells, []string{r.Permission, r.Principal, r.Operation, r.Resource, r.Name, r.Pattern, r.Host})
	}
	return printTable(e.out, []string{"PERMISSION", "PRINCIPAL", "OPERATION", "RESOURCE", "NAME", "PATTERN", "HOST"}, cells)
}

// printACLChanges prints the ACLs added or removed, one a line.
func (e *env) printACLChanges(verb string, rows []aclRow) error {
	if e.json {
		return printJSON(e.out, rows)
	}
	for _, r := range rows {
		_, _ = fmt.Fprintf(e.out, "%s %s %s %s on %s %s (%s)\n", verb, r.Permission, r.Principal, r.Operation, r.Resource, r.Name, r.Pattern)
	}
	return nil
}

func aclList(fs *pflag.FlagSet) runFunc {
	f := newACLFlags(fs)
	return func(ctx context.Context, e *env, _ []string) error {
		b, adm, done, err := e.aclAdmin(ctx, f, false)
		if err != nil {
			return err
		}
		defer done()
		results, err := adm.DescribeACLs(ctx, b)
		if err != nil {
			return err
		}
		rows := []aclRow{}
		for _, r := range results {
			if r.Err != nil {
				return refused(r.Err, r.ErrMessage)
			}
			for _, d := range r.Described {
				rows = append(rows, aclRowOf(d))
			}
		}
		return e.printACLs(rows)
	}
}

func aclAdd(fs *pflag.FlagSet) runFunc {
	f := newACLFlags(fs)
	return func(ctx context.Context, e *env, _ []string) error {
		b, adm, done, err := e.aclAdmin(ctx, f, true)
		if err != nil {
			return err
		}
		defer done()
		results, err := adm.CreateACLs(ctx, b)
		if err != nil {
			return err
		}
		added := []aclRow{}
		for _, r := range results {
			if r.Err != nil {
				return fmt.Errorf("%s %s on %s %s: %w", r.Principal, r.Operation, r.Type, r.Name, r.Err)
			}
			added = append(added, aclRow{r.Principal, r.Host, r.Type.String(), r.Name, r.Pattern.String(), r.Operation.String(), r.Permission.String()})
		}
		return e.printACLChanges("added", added)
	}
}

func aclRemove(fs *pflag.FlagSet) runFunc {
	f := newACLFlags(fs)
	return func(ctx context.Context, e *env, _ []string) error {
		b, adm, done, err := e.aclAdmin(ctx, f, true)
		if err != nil {
			return err
		}
		defer done()
		results, err := adm.DeleteACLs(ctx, b)
		if err != nil {
			return err
		}
		removed := []aclRow{}
		for _, r := range results {
			if r.Err != nil {
				return refused(r.Err, r.ErrMessage)
			}
			for _, d := range r.Deleted {
				if d.Err != nil {
					return d.Err
				}
				removed = append(removed, aclRow{d.Principal, d.Host, d.Type.String(), d.Name, d.Pattern.String(), d.Operation.String(), d.Permission.String()})
			}
		}
		if len(removed) == 0 {
			return fmt.Errorf("no ACL matched")
		}
		return e.printACLChanges("removed", removed)
	}
}
