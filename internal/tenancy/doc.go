// Package tenancy decides, purely, whether an object of one namespace may
// use a BrokerCluster of another (the cluster's spec.tenants), and whether
// its names and ACLs keep to the tenant's prefix, so that tenants sharing
// a cluster cannot reach each other's topics or take each other's user
// names.
package tenancy
