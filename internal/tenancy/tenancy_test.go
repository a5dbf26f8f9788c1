package tenancy

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

func shared(prefix raftkav1.TenantNamePrefix) *raftkav1.BrokerCluster {
	c := &raftkav1.BrokerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "kafka", Name: "shared"}}
	c.Spec.Tenants = &raftkav1.TenantsSpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"raftka.io/tenant": "shared"}}, NamePrefix: prefix}
	return c
}

func TestAdmits(t *testing.T) {
	tenant := map[string]string{"raftka.io/tenant": "shared"}
	private := &raftkav1.BrokerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "kafka", Name: "private"}}
	for name, tc := range map[string]struct {
		c      *raftkav1.BrokerCluster
		ns     string
		labels map[string]string
		want   string
	}{
		"own namespace":              {private, "kafka", nil, ""},
		"no tenants":                 {private, "team-a", tenant, "admits no other namespace"},
		"selected":                   {shared(""), "team-a", tenant, ""},
		"not selected":               {shared(""), "team-b", map[string]string{"raftka.io/tenant": "other"}, "does not admit namespace team-b"},
		"own namespace with tenants": {shared(""), "kafka", nil, ""},
	} {
		err := Admits(tc.c, tc.ns, tc.labels)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func TestTenantNames(t *testing.T) {
	user := func(name string, rules ...raftkav1.ACLRule) *raftkav1.User {
		u := &raftkav1.User{ObjectMeta: metav1.ObjectMeta{Name: name}}
		u.Spec.Authorization = &raftkav1.UserAuthorization{ACLs: rules}
		return u
	}
	rule := func(kind raftkav1.ACLResourceType, name string, ops ...raftkav1.ACLOperation) raftkav1.ACLRule {
		return raftkav1.ACLRule{Resource: raftkav1.ACLResource{Type: kind, Name: name, PatternType: raftkav1.ACLPatternPrefix}, Operations: ops}
	}
	c := shared("")
	for name, tc := range map[string]struct {
		err  error
		want string
	}{
		"topic under the prefix":       {CheckTopic(c, "team-a", "team-a.orders"), ""},
		"topic outside":                {CheckTopic(c, "team-a", "team-b.orders"), `must start with "team-a."`},
		"topic of the cluster's own":   {CheckTopic(c, "kafka", "anything"), ""},
		"names free":                   {CheckTopic(shared(raftkav1.TenantPrefixNone), "team-a", "orders"), ""},
		"user under the prefix":        {CheckUser(c, "team-a", user("team-a.app", rule("topic", "team-a.", "Read"), rule("group", "team-a.app", "Read"), rule("cluster", "", "IdempotentWrite"))), ""},
		"user name outside":            {CheckUser(c, "team-a", user("admin")), `user admin of namespace team-a must start with "team-a."`},
		"a wildcard topic":             {CheckUser(c, "team-a", user("team-a.app", rule("topic", "*", "Read"))), "outside the tenant's prefix"},
		"another tenant's topics":      {CheckUser(c, "team-a", user("team-a.app", rule("topic", "team-b.", "Read"))), "outside the tenant's prefix"},
		"a shorter prefix":             {CheckUser(c, "team-a", user("team-a.app", rule("topic", "team-", "Read"))), "outside the tenant's prefix"},
		"cluster administration":       {CheckUser(c, "team-a", user("team-a.app", rule("cluster", "", "Alter"))), "only IdempotentWrite"},
		"the cluster's own namespace":  {CheckUser(c, "kafka", user("admin", rule("topic", "*", "All"))), ""},
		"a tenant when names are free": {CheckUser(shared(raftkav1.TenantPrefixNone), "team-a", user("admin")), ""},
		"a group and its topics":       {CheckGroup(c, "team-a", "team-a.workers", []string{"team-a.orders"}), ""},
		"another tenant's topic":       {CheckGroup(c, "team-a", "team-a.workers", []string{"team-a.orders", "team-b.orders"}), `"team-b.orders" of namespace team-a`},
		"a group outside":              {CheckGroup(c, "team-a", "workers", nil), `"workers" of namespace team-a`},
	} {
		if tc.want == "" && tc.err != nil || tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", name, tc.err, tc.want)
		}
	}
}

func TestAdmissionParameters(t *testing.T) {
	private := raftkav1.BrokerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "kafka", Name: "private"}}
	free := *shared(raftkav1.TenantPrefixNone)
	free.Name = "free"
	long := *shared("")
	long.Name = strings.Repeat("x", 245)
	got := AdmissionParameters([]raftkav1.BrokerCluster{private, *shared(""), free, long}, map[string]map[string]string{
		"kafka":  nil,
		"team-a": {"raftka.io/tenant": "shared"},
		"team-b": {"raftka.io/tenant": "other"},
	})
	want := map[string]string{
		"kafka_private":       "",
		"kafka_shared":        "",
		"team-a_kafka_shared": "team-a.",
		"kafka_free":          "",
		"team-a_kafka_free":   "",
		// The long cluster's own key fits; its tenant's does not, so the
		// policies refuse its tenants rather than judge them unknown.
		"kafka_" + long.Name: "",
	}
	if len(got) != len(want) {
		t.Errorf("got %d keys %v, want %v", len(got), got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: %q (present %t), want %q", k, g, ok, v)
		}
	}
}
