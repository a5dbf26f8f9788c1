package brokerclient

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL is one Kafka ACL binding, as DescribeAcls answers it: comparable, so
// that a desired set and the brokers' can be compared as sets.
type ACL struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	PatternType  kmsg.ACLResourcePatternType
	Principal    string
	Host         string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// DiffACLs returns the bindings to create and to delete to turn have into
// want.
func DiffACLs(want, have []ACL) (create, remove []ACL) {
	for _, a := range want {
		if !slices.Contains(have, a) && !slices.Contains(create, a) {
			create = append(create, a)
		}
	}
	for _, a := range have {
		if !slices.Contains(want, a) && !slices.Contains(remove, a) {
			remove = append(remove, a)
		}
	}
	return create, remove
}

// ACLsOf lists the ACL bindings of a principal (DescribeAcls).
func (c *Clients) ACLsOf(ctx context.Context, access Access, principal string) ([]ACL, error) {
	cl, err := c.client(access)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	req.Principal = &principal
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := errorWithMessage(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	var out []ACL
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			out = append(out, ACL{ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.ResourcePatternType,
				Principal: a.Principal, Host: a.Host, Operation: a.Operation, Permission: a.PermissionType})
		}
	}
	return out, nil
}

// CreateACLs creates bindings (CreateAcls).
func (c *Clients) CreateACLs(ctx context.Context, access Access, acls []ACL) error {
	if len(acls) == 0 {
		return nil
	}
	cl, err := c.client(access)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range acls {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = a.ResourceType, a.ResourceName, a.PatternType
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = a.Principal, a.Host, a.Operation, a.Permission
		req.Creations = append(req.Creations, cr)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return firstError(resp.Results, func(r kmsg.CreateACLsResponseResult) (int16, *string) { return r.ErrorCode, r.ErrorMessage })
}

// firstError is the first error among a response's results.
func firstError[R any](results []R, code func(R) (int16, *string)) error {
	for _, r := range results {
		if err := errorWithMessage(code(r)); err != nil {
			return err
		}
	}
	return nil
}

// DeleteACLs deletes exactly the given bindings (DeleteAcls, one filter
// each).
func (c *Clients) DeleteACLs(ctx context.Context, access Access, acls []ACL) error {
	if len(acls) == 0 {
		return nil
	}
	cl, err := c.client(access)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, a := range acls {
		f := kmsg.NewDeleteACLsRequestFilter()
		name, principal, host := a.ResourceName, a.Principal, a.Host
		f.ResourceType, f.ResourceName, f.ResourcePatternType = a.ResourceType, &name, a.PatternType
		f.Principal, f.Host, f.Operation, f.PermissionType = &principal, &host, a.Operation, a.Permission
		req.Filters = append(req.Filters, f)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return firstError(resp.Results, func(r kmsg.DeleteACLsResponseResult) (int16, *string) { return r.ErrorCode, r.ErrorMessage })
}

// scramIterations is the iteration count of the credentials the operator
// sets, Kafka's default.
const scramIterations = 4096

// SetSCRAM sets a user's SCRAM-SHA-512 credential from its password
// (AlterUserScramCredentials; the salt is made here, and only the salted
// password crosses the network).
func (c *Clients) SetSCRAM(ctx context.Context, access Access, user, password string) error {
	adm, err := c.Admin(access)
	if err != nil {
		return err
	}
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: scramIterations, Password: password}})
	if err != nil {
		return err
	}
	return res[user].Err
}

// DeleteSCRAM deletes a user's SCRAM credentials, if it has any.
func (c *Clients) DeleteSCRAM(ctx context.Context, access Access, user string) error {
	adm, err := c.Admin(access)
	if err != nil {
		return err
	}
	described, err := adm.DescribeUserSCRAMs(ctx, user)
	if err != nil {
		return err
	}
	var del []kadm.DeleteSCRAM
	for _, info := range described[user].CredInfos {
		del = append(del, kadm.DeleteSCRAM{User: user, Mechanism: info.Mechanism})
	}
	if len(del) == 0 {
		return nil
	}
	res, err := adm.AlterUserSCRAMs(ctx, del, nil)
	if err != nil {
		return err
	}
	if err := res[user].Err; err != nil && !errors.Is(err, kerr.ResourceNotFound) {
		return err
	}
	return nil
}

// Authenticates tells whether a user's password authenticates with
// SCRAM-SHA-512 at access's addresses: a real login, on a connection of
// its own. An error is returned when the brokers could not be asked.
func Authenticates(ctx context.Context, access Access, user, password string) (bool, error) {
	login := access
	login.User, login.Password = user, password
	cl, err := kgo.NewClient(append(login.options(), kgo.ClientID("raftka-operator-login-check"), kgo.RequestRetries(0))...)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	// Metadata for no topic: any authenticated user may ask it.
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{}
	_, err = md.RequestWith(ctx, cl)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return false, nil
	}
	return false, fmt.Errorf("logging in as %s: %w", user, err)
}

// UserQuotas are the quota values of the entity user=<user> alone
// (DescribeClientQuotas, strict).
func (c *Clients) UserQuotas(ctx context.Context, access Access, user string) (map[string]float64, error) {
	adm, err := c.Admin(access)
	if err != nil {
		return nil, err
	}
	described, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: &user}})
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, d := range described {
		for _, v := range d.Values {
			out[v.Key] = v.Value
		}
	}
	return out, nil
}

// SetUserQuotas makes the quota values of user=<user> want: those missing
// or different are set, the others removed (AlterClientQuotas). have is
// what UserQuotas read.
func (c *Clients) SetUserQuotas(ctx context.Context, access Access, user string, want, have map[string]float64) (changed bool, err error) {
	var ops []kadm.AlterClientQuotaOp
	for k, v := range want {
		if cur, ok := have[k]; !ok || cur != v {
			ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: v})
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
		}
	}
	if len(ops) == 0 {
		return false, nil
	}
	adm, err := c.Admin(access)
	if err != nil {
		return false, err
	}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &user}}, Ops: ops}})
	if err != nil {
		return false, err
	}
	for _, r := range res {
		if r.Err != nil {
			return false, r.Err
		}
	}
	return true, nil
}
